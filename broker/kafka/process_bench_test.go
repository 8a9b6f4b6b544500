//go:build unix

package kafka

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/retrypolicy"
)

// BenchmarkPartitionWorker measures a partition worker alone, without a
// cluster: b.N buffered records of 1 KiB with one header each, handled by
// a no-op handler, as `redrive bench`'s Kafka consume row has them (the
// Delivery, the pipeline, the slot, marking done). The records are built
// before the timer: what is left is redrive's own cost per record, beside
// franz-go's fetching that BenchmarkConsume includes, and much less
// sensitive to a busy machine. cpu-ns/op is the process's user+system
// time per record, steadier than ns/op when other processes share the CPUs.
func BenchmarkPartitionWorker(b *testing.B) { benchPartitionWorker(b, false) }

// BenchmarkPartitionWorkerOnDemand is BenchmarkPartitionWorker for a
// subscription with HeadersOnDemand: no Headers map per record.
func BenchmarkPartitionWorkerOnDemand(b *testing.B) { benchPartitionWorker(b, true) }

// BenchmarkPartitionWorkerRetry is BenchmarkPartitionWorker with every
// 10th record failing once, retried in place at once (blocking mode), as
// `redrive bench`'s Kafka retry row: the failure path's own cost.
func BenchmarkPartitionWorkerRetry(b *testing.B) { benchPartitionWorkerMode(b, false, 10) }

func benchPartitionWorker(b *testing.B, onDemand bool) { benchPartitionWorkerMode(b, onDemand, 0) }

// benchPartitionWorkerMode runs the partition worker benchmark; with
// failEvery > 0, every failEvery-th record fails once.
func benchPartitionWorkerMode(b *testing.B, onDemand bool, failEvery int) {
	cfg := Config{Brokers: []string{"unused:9092"}, InstanceID: "bench"}.withDefaults()
	cfg.MaxBuffered, cfg.MaxBufferedBytes = 1<<40, 1<<40 // never throttled: no client here
	br := &Broker{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	sub := broker.Subscription{Topic: "t", Group: "g", Concurrency: 3, HeadersOnDemand: onDemand,
		Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{0}}}}.WithDefaults()
	c := newConsumer(br, sub, br.log)
	c.hctx = context.Background()
	var n atomic.Int64
	done := make(chan struct{})
	c.h = func(_ context.Context, d *broker.Delivery) error {
		if failEvery > 0 && d.Attempt == 1 && d.Offset%int64(failEvery) == 0 {
			return errFailOnce
		}
		if n.Add(1) == int64(b.N) {
			close(done)
		}
		return nil
	}
	value := make([]byte, 1024)
	recs := make([]*kgo.Record, b.N)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "t", Value: value, Offset: int64(i), Timestamp: time.Now(),
			Headers: []kgo.RecordHeader{{Key: "bench-seq", Value: []byte(strconv.Itoa(i))}}}
	}
	p := newPartition(c, "t", 0)
	for start := 0; start < len(recs); start += maxPollRecords {
		p.push(recs[start:min(start+maxPollRecords, len(recs))], int64(len(recs)))
	}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	go p.run()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d records handled after a minute", n.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	p.halt()
	<-p.exited
	if eo, ok := p.uncommitted(); !ok || eo.Offset != int64(b.N) {
		b.Fatalf("watermark %d (%v), want %d", eo.Offset, ok, b.N)
	}
}

var errFailOnce = errors.New("fails once")

// processCPU is the process's user+system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
