package sampling

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestOutage(t *testing.T) {
	t.Parallel()
	var o Outage
	boom := errors.New("boom")
	steps := []struct {
		err          error
		began, ended bool
	}{
		{nil, false, false},
		{boom, true, false},
		{boom, false, false},
		{context.Canceled, false, false},
		{nil, false, true},
		{nil, false, false},
		{context.DeadlineExceeded, true, false},
	}
	for i, s := range steps {
		began, ended := o.Observe(s.err)
		if began != s.began || ended != s.ended {
			t.Fatalf("step %d Observe(%v) = %v, %v; want %v, %v", i, s.err, began, ended, s.began, s.ended)
		}
	}
	if !o.Down() {
		t.Error("Down after a deadline = false")
	}
}

// The loop reports an outage once at its start and once at its end, and
// passes over ignored errors.
func TestLoop(t *testing.T) {
	t.Parallel()
	boom, notReady := errors.New("boom"), errors.New("not ready")
	results := []error{notReady, nil, boom, boom, notReady, boom, nil, nil, boom}
	var mu sync.Mutex
	var events []string
	i := 0
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	l := Loop{
		Interval: time.Millisecond,
		Sample: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if i == len(results) {
				cancel()
				return context.Canceled
			}
			i++
			return results[i-1]
		},
		Ignore: func(err error) bool { return errors.Is(err, notReady) },
		Down:   func(err error) { mu.Lock(); events = append(events, "down "+err.Error()); mu.Unlock() },
		Up:     func() { mu.Lock(); events = append(events, "up"); mu.Unlock() },
	}
	go func() { _ = l.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	want := []string{"down boom", "up", "down boom"}
	if len(events) != len(want) {
		t.Fatalf("events = %q, want %q", events, want)
	}
	for k := range want {
		if events[k] != want[k] {
			t.Fatalf("events = %q, want %q", events, want)
		}
	}
}
