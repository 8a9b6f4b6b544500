package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Induced failures of the retry and dlq scenarios.
var (
	errTransient = errors.New("bench: induced failure")
	errPermanent = errors.New("bench: induced permanent failure")
)

// fate returns the handler's answer to message seq of scenario on its
// first or a later attempt, as the bench's own handlers: retry fails every
// 10th message once, dlq fails every 100th for good.
func fate(scenario string, seq int, first bool) error {
	switch {
	case scenario == ScenarioRetry && seq%10 == 0 && first:
		return errTransient
	case scenario == ScenarioDLQ && seq%100 == 0:
		return errPermanent
	}
	return nil
}

// seqOf parses the sequence header of a pre-filled message.
func seqOf(v string) (int, error) {
	seq, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("header %s %q: %w", headerSeq, v, err)
	}
	return seq, nil
}

// drain counts messages done (handled, or failed for good) from start to
// the last one, as the bench's drain.
type drain struct {
	n     int64
	start time.Time
	count atomic.Int64
	first atomic.Int64 // unix nanoseconds of the first hit
	once  sync.Once
	last  time.Time
	done  chan struct{}
}

func newDrain(n int, start time.Time) *drain {
	return &drain{n: int64(n), start: start, done: make(chan struct{})}
}

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

// wait blocks until every message is done, ctx ends or the consumer
// reports on stopped that it stopped (a nil error included) before.
func (d *drain) wait(ctx context.Context, stopped <-chan error) error {
	select {
	case <-d.done:
		return nil
	case err := <-stopped:
		return fmt.Errorf("consumer stopped with %d of %d messages done: %v", d.count.Load(), d.n, err)
	case <-ctx.Done():
		return fmt.Errorf("%w with %d of %d messages done", ctx.Err(), d.count.Load(), d.n)
	}
}

// result is the drain's result, with note.
func (d *drain) result(note string) result {
	return result{
		messages: int(d.n),
		end:      d.last,
		first:    time.Unix(0, d.first.Load()).Sub(d.start),
		note:     note,
	}
}

// body returns a message body of size bytes, as the bench's.
func body(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// batched returns n items made by mk(0..n-1) in batches of batch.
func batched[T any](n, batch int, mk func(i int) T) [][]T {
	var out [][]T
	for start := 0; start < n; start += batch {
		b := make([]T, 0, min(batch, n-start))
		for i := start; i < min(start+batch, n); i++ {
			b = append(b, mk(i))
		}
		out = append(out, b)
	}
	return out
}

// publishTimed is the measured interval of a publish scenario: every batch
// through publish, in order, each call timed.
func publishTimed[T any](ctx context.Context, m *meter, n int, batches [][]T, publish func([]T) error, note string) error {
	lat := make([]time.Duration, 0, len(batches))
	if err := m.start(); err != nil {
		return err
	}
	for _, batch := range batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		if err := publish(batch); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	return m.finish(result{messages: n, lat: lat, note: note})
}
