package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
)

// call is one handler invocation.
type call struct {
	at      time.Time
	group   string
	member  int
	attempt int
	d       broker.Delivery
	err     error // what the handler returned
}

// recorder records handler calls and lets a test wait for a condition on
// them without sleeping: every record wakes the waiters.
type recorder struct {
	mu      sync.Mutex
	calls   []call
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(c call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// snapshot returns a copy of the calls so far.
func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// waitUntil waits until cond holds over the calls, failing the test after
// timeout with what it was waiting for.
func (r *recorder) waitUntil(t testing.TB, timeout time.Duration, what string, cond func([]call) bool) []call {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		calls := append([]call(nil), r.calls...)
		ch := r.changed
		r.mu.Unlock()
		if cond(calls) {
			return calls
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s (%d handler calls so far)", timeout, what, len(calls))
			return nil
		}
	}
}

// handler returns a broker.Handler that records each call and returns what
// decide says.
func (r *recorder) handler(group string, member int, decide func(d *broker.Delivery) error) broker.Handler {
	return func(ctx context.Context, d *broker.Delivery) error {
		var err error
		if decide != nil {
			err = decide(d)
		}
		r.add(call{at: time.Now(), group: group, member: member, attempt: d.Attempt, d: *d, err: err})
		return err
	}
}

// successes counts, per message id, the calls of group that returned nil.
func successes(calls []call, group string) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		if c.group == group && c.err == nil {
			out[c.d.ID]++
		}
	}
	return out
}

// callsOf returns the calls of group for message id, in order.
func callsOf(calls []call, group, id string) []call {
	var out []call
	for _, c := range calls {
		if c.group == group && c.d.ID == id {
			out = append(out, c)
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// topicName returns a topic name unique to this test run.
func topicName(t testing.TB) string {
	n := strings.ToLower(unsafeName.ReplaceAllString(t.Name(), "-"))
	if len(n) > 60 {
		n = n[len(n)-60:]
	}
	return "e2e." + strings.Trim(n, "-") + "." + broker.NewMessageID()[:6]
}

// consumer runs Consume in the background until the returned stop is
// called (or the test ends); stop waits for Consume to return and fails the
// test if it returned an error.
func consume(t testing.TB, b broker.Broker, sub broker.Subscription, h broker.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, sub, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Consume(%s/%s) returned %v", sub.Topic, sub.Group, err)
				}
			case <-time.After(sub.ShutdownTimeout + 30*time.Second):
				t.Errorf("Consume(%s/%s) did not return after its context ended", sub.Topic, sub.Group)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// errFailing is the error test handlers fail with.
type errFailing struct{ msg string }

func (e *errFailing) Error() string { return e.msg }

// ErrorClass gives test failures a stable class.
func (e *errFailing) ErrorClass() string { return "e2e.Failing" }

func failing(format string, a ...any) error { return &errFailing{msg: fmt.Sprintf(format, a...)} }

// quietLogger keeps the suite's output to what it reports: warnings and
// errors only when REDRIVE_E2E_LOG is set.
func quietLogger() *slog.Logger {
	if os.Getenv("REDRIVE_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
