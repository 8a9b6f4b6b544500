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
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/retrypolicy"
)

// BenchmarkPartitionWorker measures a partition worker alone, without a
// cluster: b.N records of 1 KiB with one header each, handled by a no-op
// handler, as `redrive bench`'s Kafka consume row has them (the Delivery,
// the pipeline, the slot, marking done). A feeder makes the records as
// the benchmark goes, a poll's worth at a time and a few polls ahead, as
// franz-go hands them over: the heap and the collector's work stay what a
// consumer's are. BenchmarkPartitionWorkerRaw is the same feeder and
// handler without redrive: the difference is redrive's own cost per
// record. cpu-ns/op is the process's user+system time per record,
// steadier than ns/op when other processes share the CPUs.
func BenchmarkPartitionWorker(b *testing.B) { benchPartitionWorker(b, false) }

// BenchmarkPartitionWorkerOnDemand is BenchmarkPartitionWorker for a
// subscription with HeadersOnDemand: no Headers map per record.
func BenchmarkPartitionWorkerOnDemand(b *testing.B) { benchPartitionWorker(b, true) }

// BenchmarkPartitionWorkerReuse is BenchmarkPartitionWorker for a
// subscription with ReuseDeliveries: the Deliveries and their Headers
// maps are reused, nothing is allocated per record.
func BenchmarkPartitionWorkerReuse(b *testing.B) {
	benchPartitionWorkerMode(b, workerMode{reuse: true})
}

// BenchmarkPartitionWorkerOnDemandReuse is BenchmarkPartitionWorker with
// both HeadersOnDemand and ReuseDeliveries.
func BenchmarkPartitionWorkerOnDemandReuse(b *testing.B) {
	benchPartitionWorkerMode(b, workerMode{onDemand: true, reuse: true})
}

// BenchmarkPartitionWorkerRetry is BenchmarkPartitionWorker with every
// 10th record failing once, retried in place at once (blocking mode), as
// `redrive bench`'s Kafka retry row: the failure path's own cost.
func BenchmarkPartitionWorkerRetry(b *testing.B) {
	benchPartitionWorkerMode(b, workerMode{failEvery: 10})
}

// BenchmarkPartitionWorkerRaw is BenchmarkPartitionWorker's reference:
// the feeder's batches handed over a channel to a goroutine that calls
// the same handler's count on each record, as `redrive bench`'s raw
// drain does.
func BenchmarkPartitionWorkerRaw(b *testing.B) {
	f := newFeed(b)
	batches := make(chan []*kgo.Record, feedAhead)
	go func() {
		for recs := range batches {
			for range recs {
				f.handled()
			}
		}
	}()
	f.run(b, func(recs []*kgo.Record) { batches <- recs })
	close(batches)
}

func benchPartitionWorker(b *testing.B, onDemand bool) {
	benchPartitionWorkerMode(b, workerMode{onDemand: onDemand})
}

// workerMode is how a partition worker benchmark runs.
type workerMode struct {
	onDemand, reuse bool // Subscription.HeadersOnDemand, ReuseDeliveries
	failEvery       int  // > 0: every failEvery-th record fails once
}

// benchPartitionWorkerMode runs the partition worker benchmark in mode m.
func benchPartitionWorkerMode(b *testing.B, m workerMode) {
	cfg := Config{Brokers: []string{"unused:9092"}, InstanceID: "bench"}.withDefaults()
	cfg.MaxBuffered, cfg.MaxBufferedBytes = 1<<40, 1<<40 // the feeder bounds what is buffered
	br := &Broker{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	sub := broker.Subscription{Topic: "t", Group: "g", Concurrency: 3, HeadersOnDemand: m.onDemand, ReuseDeliveries: m.reuse,
		Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{0}}}}.WithDefaults()
	c := newConsumer(br, sub, br.log)
	c.hctx = context.Background()
	f := newFeed(b)
	c.h = func(_ context.Context, d *broker.Delivery) error {
		if m.failEvery > 0 && d.Attempt == 1 && d.Offset%int64(m.failEvery) == 0 {
			return errFailOnce
		}
		f.handled()
		return nil
	}
	p := newPartition(c, "t", 0)
	go p.run()
	f.run(b, func(recs []*kgo.Record) { p.push(recs, int64(b.N)) })
	p.halt()
	<-p.exited
	if eo, ok := p.uncommitted(); !ok || eo.Offset != int64(b.N) {
		b.Fatalf("watermark %d (%v), want %d", eo.Offset, ok, b.N)
	}
}

// feedAhead is how many batches the feeder makes ahead of the handler.
const feedAhead = 4

// feed makes a benchmark's b.N records, maxPollRecords at a time, and
// counts them handled.
type feed struct {
	n     int64
	count atomic.Int64
	room  chan struct{} // a token per batch the feeder may make
	done  chan struct{} // closed when the b.N-th record is handled
}

func newFeed(b *testing.B) *feed {
	f := &feed{n: int64(b.N), room: make(chan struct{}, feedAhead), done: make(chan struct{})}
	for range feedAhead {
		f.room <- struct{}{}
	}
	return f
}

// handled counts a record handled: the last closes done, the last of
// each batch lets the feeder make one more.
func (f *feed) handled() {
	switch k := f.count.Add(1); {
	case k == f.n:
		close(f.done)
	case k%maxPollRecords == 0:
		f.room <- struct{}{}
	}
}

// run times making the records and handing each batch to push until
// every record is handled, and reports the CPU time per record.
func (f *feed) run(b *testing.B, push func([]*kgo.Record)) {
	value := make([]byte, 1024)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	go func() {
		now, id := time.Now(), []byte(broker.NewMessageID())
		for start := 0; start < b.N; start += maxPollRecords {
			select {
			case <-f.room:
			case <-f.done:
				return
			}
			recs := make([]*kgo.Record, min(maxPollRecords, b.N-start))
			for i := range recs {
				o := start + i
				recs[i] = &kgo.Record{Topic: "t", Value: value, Offset: int64(o), Timestamp: now,
					Headers: []kgo.RecordHeader{
						{Key: driver.HeaderMessageID, Value: id}, // as Publish writes it
						{Key: "bench-seq", Value: strconv.AppendInt(nil, int64(o), 10)},
					}}
			}
			push(recs)
		}
	}()
	select {
	case <-f.done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d records handled after a minute", f.count.Load(), b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
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
