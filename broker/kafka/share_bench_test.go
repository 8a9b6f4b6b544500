//go:build unix

package kafka_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
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
