//go:build unix

package kafka_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/retrypolicy"
)

// BenchmarkShareConsume drains b.N pre-filled 1 KiB records through
// Consume in share mode (Prefetch 500, seven handlers) with a no-op
// handler: what `redrive bench`'s share row measures, for -cpuprofile and
// -memprofile.
func BenchmarkShareConsume(b *testing.B) {
	benchDrain(b, func(c *kafka.Config) { c.FetchMaxWait = kafka.DefaultFetchMaxWait },
		broker.Subscription{Group: "g", RetryMode: broker.Share, Concurrency: 7, Prefetch: 500})
}

// BenchmarkShareConsumeRaw is BenchmarkShareConsume's reference, as
// `redrive bench` runs it: seven franz-go share clients, 500 records per
// poll, each record accepted.
func BenchmarkShareConsumeRaw(b *testing.B) {
	brokers, topic := consumeBenchTopic(b)
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	if err := kafka.SetShareOffsetReset(b.Context(), adm, "raw", "earliest"); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var n atomic.Int64
	done := make(chan struct{})
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 7 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ShareGroup("raw"), kgo.ConsumeTopics(topic),
			kgo.ShareMaxRecords(500), kgo.FetchMaxWait(kafka.DefaultFetchMaxWait))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		wg.Go(func() {
			for ctx.Err() == nil {
				cl.PollRecords(ctx, 0).EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					if n.Add(1) == int64(b.N) {
						close(done)
					}
				})
			}
		})
	}
	awaitConsumed(b, done, &n)
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	cancel()
	wg.Wait()
	time.Sleep(0)
}

// BenchmarkShareRetry is BenchmarkShareConsume with every tenth record
// failing once with a 10 ms back-off (waited out holding the record):
// what `redrive bench`'s "10 % fail once" share row measures.
func BenchmarkShareRetry(b *testing.B) { benchShareRetry(b, 0) }

// BenchmarkShareRetryStandby is BenchmarkShareRetry with seven standby
// members (Config.ShareStandby): they poll while the others wait out
// their back-offs.
func BenchmarkShareRetryStandby(b *testing.B) { benchShareRetry(b, 7) }

func benchShareRetry(b *testing.B, standby int) {
	brokers, topic := consumeBenchTopic(b)
	br := kafkatest.New(b, brokers, func(c *kafka.Config) {
		c.FetchMaxWait, c.ShareStandby = kafka.DefaultFetchMaxWait, standby
	})
	sub := broker.Subscription{Topic: topic, Group: "g", RetryMode: broker.Share, Concurrency: 7, Prefetch: 500,
		Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{10 * time.Millisecond}}}}
	if err := br.Declare(b.Context(), sub); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var n atomic.Int64
	done := make(chan struct{})
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	go func() {
		_ = br.Consume(ctx, sub, func(_ context.Context, d *broker.Delivery) error {
			if seq, _ := strconv.Atoi(d.Header("bench-seq")); seq%10 == 0 && d.Attempt == 1 {
				return errors.New("fails once")
			}
			if n.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		})
	}()
	awaitConsumed(b, done, &n)
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}
