package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redrive/redrive/broker"
)

// headerSeq numbers the messages of a pre-filled queue or topic, so that
// handlers can pick the ones that fail.
const headerSeq = "bench-seq"

// Failure modes of the consume-side scenarios.
const (
	failNone  = ""
	failRetry = ScenarioRetry // every 10th message fails once
	failDLQ   = ScenarioDLQ   // every 100th message is a permanent failure
	// failNever reads the sequence header as failRetry and failDLQ do,
	// and never fails: the failing rounds' baseline (failingRounds).
	failNever = "never"
)

var errBench = errors.New("bench: induced failure")

// drain counts messages done (handled, or dead-lettered by a permanent
// failure) and times the consumer's start to the last one done. The first
// one is timed too: that interval is the consumer's start-up (connection,
// declarations, group join and first fetch).
type drain struct {
	n     int64
	start time.Time
	count atomic.Int64
	first atomic.Int64 // unix nanoseconds of the first hit
	once  sync.Once
	last  time.Time
	done  chan struct{}
}

// newDrain returns a drain of n messages whose clock starts now.
func newDrain(n int) *drain { return &drain{n: int64(n), start: time.Now(), done: make(chan struct{})} }

// hit counts one message done.
func (d *drain) hit() {
	if d.first.Load() == 0 {
		d.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	if d.count.Add(1) == d.n {
		d.once.Do(func() {
			d.last = time.Now()
			close(d.done)
		})
	}
}

// wait blocks until every message is done, ctx ends or timeout passes.
func (d *drain) wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("timed out after %s with %d of %d messages done", timeout, d.count.Load(), d.n)
	}
}

// elapsed is the time from the start to the last message done.
func (d *drain) elapsed() time.Duration { return d.last.Sub(d.start) }

// startup is the time from the start to the first message done.
func (d *drain) startup() time.Duration { return time.Unix(0, d.first.Load()).Sub(d.start) }

// handler is the redrive handler of a consume-side scenario.
func (d *drain) handler(mode string) broker.Handler {
	return func(_ context.Context, m *broker.Delivery) error {
		if mode == failNone { // as the raw drains: no header read
			d.hit()
			return nil
		}
		seq, _ := strconv.Atoi(m.Header(headerSeq)) // Headers, or on demand
		switch {
		case mode == failRetry && seq%10 == 0 && m.Attempt <= 1:
			return errBench
		case mode == failDLQ && seq%100 == 0:
			d.hit()
			return broker.Permanent(errBench)
		}
		d.hit()
		return nil
	}
}

// messages returns n messages of body with a sequence header, split in
// batches of batch.
func messages(n, batch int, b []byte) [][]broker.Message {
	var out [][]broker.Message
	for start := 0; start < n; start += batch {
		ms := make([]broker.Message, 0, min(batch, n-start))
		for i := start; i < min(start+batch, n); i++ {
			ms = append(ms, broker.Message{Value: b, Headers: map[string]string{headerSeq: strconv.Itoa(i)}})
		}
		out = append(out, ms)
	}
	return out
}

// row is the Row of a finished drain, its start-up time in the note.
func (d *drain) row(scenario, brokerName, client string, u usage) Row {
	r := row(scenario, brokerName, client, int(d.n), d.elapsed(), u)
	r.Note = "first after " + dur(d.startup())
	return r
}

// consumeThrough drains n pre-filled messages of s through redrive's
// Consume with the handler of mode and returns the measured row.
func consumeThrough(ctx context.Context, b broker.Broker, s broker.Subscription, n int, scenario, brokerName, mode string, timeout time.Duration) (Row, error) {
	return consumeWith(ctx, b, s, n, scenario, brokerName, timeout, func(dr *drain) broker.Handler { return dr.handler(mode) })
}

// consumeWith drains n pre-filled messages of s through redrive's Consume
// with the handler handler makes of the drain (it must hit it once per
// message done) and returns the measured row.
func consumeWith(ctx context.Context, b broker.Broker, s broker.Subscription, n int, scenario, brokerName string, timeout time.Duration,
	handler func(*drain) broker.Handler) (Row, error) {
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	m := startMeter()
	dr := newDrain(n)
	go func() { done <- b.Consume(cctx, s, handler(dr)) }()
	werr := dr.wait(ctx, timeout)
	_, u := m.stop()
	cancel()
	if cerr := <-done; cerr != nil {
		return Row{}, fmt.Errorf("redrive consume: %w", cerr)
	}
	if werr != nil {
		return Row{}, fmt.Errorf("redrive: %w", werr)
	}
	return dr.row(scenario, brokerName, ClientRedrive, u), nil
}
