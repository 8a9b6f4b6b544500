package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
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
type recorder struct{ testenv.Recorder[call] }

func newRecorder() *recorder { return &recorder{} }

// handler returns a broker.Handler that records each call and returns what
// decide says.
func (r *recorder) handler(group string, member int, decide func(d *broker.Delivery) error) broker.Handler {
	return func(ctx context.Context, d *broker.Delivery) error {
		var err error
		if decide != nil {
			err = decide(d)
		}
		r.Add(call{at: time.Now(), group: group, member: member, attempt: d.Attempt, d: *d, err: err})
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

// waitHandledOnce waits up to within until n messages were handled by
// group (a call returned nil), fails t for each handled more than once,
// and returns the calls.
func (r *recorder) waitHandledOnce(t *testing.T, group string, n int, within time.Duration) []call {
	t.Helper()
	calls := r.WaitUntil(t, within, fmt.Sprintf("%d messages handled by %s", n, group), func(c []call) bool {
		return len(successes(c, group)) >= n
	})
	for id, k := range successes(calls, group) {
		if k != 1 {
			t.Errorf("%s handled %d times", id, k)
		}
	}
	return calls
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
