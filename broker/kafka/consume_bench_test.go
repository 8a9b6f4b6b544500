//go:build unix

package kafka_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
)

// BenchmarkConsume drains b.N pre-filled 1 KiB records of a three-partition
// kfake topic through Consume with a no-op handler: what `redrive bench`'s
// Kafka consume row measures, without the raw client beside it, for
// -cpuprofile and -memprofile. cpu-ns/op is the process's user+system
// time per record (kfake's included), steadier than ns/op on a busy machine.
func BenchmarkConsume(b *testing.B) {
	_, brokers := kafkatest.Fake(b)
	br := kafkatest.New(b, brokers, func(c *kafka.Config) { c.CommitInterval = time.Second })
	topic := topicName(b)
	sub := broker.Subscription{Topic: topic, Group: "g", Concurrency: 3}
	if err := br.Declare(b.Context(), sub); err != nil {
		b.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	value := make([]byte, 1024)
	for start := 0; start < b.N; start += 1000 {
		var recs []*kgo.Record
		for i := start; i < min(start+1000, b.N); i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: value,
				Headers: []kgo.RecordHeader{{Key: "bench-seq", Value: []byte(strconv.Itoa(i))}}})
		}
		if err := prod.ProduceSync(b.Context(), recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var n atomic.Int64
	done := make(chan struct{})
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	go func() {
		_ = br.Consume(ctx, sub, func(context.Context, *broker.Delivery) error {
			if n.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d records consumed after a minute", n.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
