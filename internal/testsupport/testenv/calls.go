package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
)

// Recorder keeps what a test's handlers saw (calls of any type) and lets
// the test wait for a condition on them without sleeping: every Add wakes
// the waiters. The zero value is ready to use.
type Recorder[T any] struct {
	mu      sync.Mutex
	items   []T
	changed chan struct{}
}

// wake returns the channel closed by the next Add; r.mu is held.
func (r *Recorder[T]) wake() chan struct{} {
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// Add records v and wakes the waiters.
func (r *Recorder[T]) Add(v T) {
	r.mu.Lock()
	r.items = append(r.items, v)
	close(r.wake())
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Snapshot returns a copy of what was recorded so far.
func (r *Recorder[T]) Snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// WaitUntil waits until cond holds over what was recorded and returns it,
// failing t after timeout with what it was waiting for.
func (r *Recorder[T]) WaitUntil(t testing.TB, timeout time.Duration, what string, cond func([]T) bool) []T {
	t.Helper()
	items, ok := r.Await(timeout, cond)
	if !ok {
		t.Fatalf("timed out after %s waiting for %s (%d recorded so far)", timeout, what, len(items))
	}
	return items
}

// Await waits up to timeout until cond holds over what was recorded; it
// returns what was recorded and whether cond held, for a test that
// accounts for what did not come rather than failing at once.
func (r *Recorder[T]) Await(timeout time.Duration, cond func([]T) bool) ([]T, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		items := append([]T(nil), r.items...)
		ch := r.wake()
		r.mu.Unlock()
		if cond(items) {
			return items, true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return items, false
		}
	}
}

// Consume runs b.Consume(sub, h) in the background until the returned stop
// is called (or t ends); stop waits for Consume to return and fails t when
// it returned an error or did not return within sub's shutdown timeout
// and 30 s.
func Consume(t testing.TB, b broker.Broker, sub broker.Subscription, h broker.Handler) (stop func()) {
	t.Helper()
	return Background(t, fmt.Sprintf("Consume(%s/%s)", sub.Topic, sub.Group), sub.WithDefaults().ShutdownTimeout+30*time.Second,
		func(ctx context.Context) error { return b.Consume(ctx, sub, h) })
}

// Background runs run in a goroutine until the returned stop is called (or
// t ends); stop cancels run's context, waits up to timeout for it to
// return, and fails t, naming what, when it returned an error or did not
// return.
func Background(t testing.TB, what string, timeout time.Duration, run func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s = %v, want nil", what, err)
				}
			case <-time.After(timeout):
				t.Errorf("%s did not return after its context ended", what)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
