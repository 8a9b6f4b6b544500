//go:build unix

package kafka_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
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
func BenchmarkConsume(b *testing.B) { benchConsume(b, false) }

// BenchmarkConsumeOnDemand is BenchmarkConsume with HeadersOnDemand: the
// consume row's "headers on demand" client.
func BenchmarkConsumeOnDemand(b *testing.B) { benchConsume(b, true) }

func benchConsume(b *testing.B, onDemand bool) {
	benchDrain(b, func(c *kafka.Config) { c.CommitInterval = time.Second },
		broker.Subscription{Group: "g", Concurrency: 3, HeadersOnDemand: onDemand})
}

// benchDrain drains b.N records pre-filled in a topic of its own through
// Consume of sub (its Topic set to that topic) with a no-op handler, on a
// broker whose test Config edit changes.
func benchDrain(b *testing.B, edit func(*kafka.Config), sub broker.Subscription) {
	brokers, topic := consumeBenchTopic(b)
	br := kafkatest.New(b, brokers, edit)
	sub.Topic = topic
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
		_ = br.Consume(ctx, sub, func(context.Context, *broker.Delivery) error {
			if n.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		})
	}()
	awaitConsumed(b, done, &n)
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkConsumeRaw is BenchmarkConsume's reference, as `redrive bench`
// runs it: a franz-go group consumer, a goroutine per partition, records
// marked for a commit every second.
func BenchmarkConsumeRaw(b *testing.B) {
	brokers, topic := consumeBenchTopic(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup("raw"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second),
		kgo.FetchMaxWait(kafka.DefaultFetchMaxWait))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var n atomic.Int64
	done := make(chan struct{})
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	go func() {
		workers := map[int32]chan []*kgo.Record{}
		defer func() {
			for _, w := range workers {
				close(w)
			}
		}()
		for ctx.Err() == nil {
			cl.PollRecords(ctx, 1000).EachPartition(func(p kgo.FetchTopicPartition) {
				if len(p.Records) == 0 {
					return
				}
				w, ok := workers[p.Partition]
				if !ok {
					w = make(chan []*kgo.Record, 1)
					workers[p.Partition] = w
					go func() {
						for recs := range w {
							if n.Add(int64(len(recs))) == int64(b.N) {
								close(done)
							}
							cl.MarkCommitRecords(recs...)
						}
					}()
				}
				select {
				case w <- p.Records:
				case <-ctx.Done():
				}
			})
		}
	}()
	awaitConsumed(b, done, &n)
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// consumeBenchTopic starts a cluster and fills a three-partition topic with
// b.N records of 1 KiB, each with one header.
func consumeBenchTopic(b *testing.B) ([]string, string) {
	// Share heartbeats every 200 ms, as `redrive bench` has them: Kafka's
	// 5 s would measure the share group's forming.
	_, brokers := kafkatest.Fake(b, kfake.BrokerConfigs(map[string]string{"group.share.heartbeat.interval.ms": "200"}))
	topic := topicName(b)
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(b.Context(), 3, -1, nil, topic); err != nil {
		b.Fatal(err)
	}
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
	return brokers, topic
}

// awaitConsumed waits until done is closed, within a minute.
func awaitConsumed(b *testing.B, done <-chan struct{}, n *atomic.Int64) {
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d records consumed after a minute", n.Load(), b.N)
	}
	b.StopTimer()
}

// cpuTime is the process's user+system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
