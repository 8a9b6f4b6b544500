package driver

import (
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
)

// fuzzHeaders turns s into a header map: one "name=value" per line.
func fuzzHeaders(s string) map[string]string {
	h := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		k, v, _ := strings.Cut(line, "=")
		h[k] = v
	}
	return h
}

// FuzzReadStory reads the story of arbitrary headers: the attempt is at
// least 1, and a retry's headers read back as the next attempt.
func FuzzReadStory(f *testing.F) {
	for _, s := range []string{
		"",
		broker.HeaderAttempt + "=3\n" + broker.HeaderFirstFailureAt + "=2025-01-15T10:30:00.000Z\n" + broker.HeaderError + "=boom",
		broker.HeaderAttempt + "=-7\n" + broker.HeaderLastFailureAt + "=yesterday",
		broker.HeaderAttempt + "=9223372036854775807",
		broker.HeaderAttempt + "=99999999999999999999999\n" + broker.HeaderFirstFailureAt + "=9999-12-31T23:59:59Z",
		broker.HeaderAttempt + "=+4\n" + broker.HeaderFirstFailureAt + "=0000-01-01T00:00:00Z",
		broker.HeaderAttempt + "= 2\n" + broker.HeaderError + "=\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := &broker.Delivery{Message: broker.Message{Headers: fuzzHeaders(s)}, Group: "g"}
		ReadStory(d)
		if d.Attempt < 1 {
			t.Fatalf("attempt %d from %q", d.Attempt, s)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		next := &broker.Delivery{Message: broker.Message{Headers: FailureHeaders(d, Outcome{Retry: true}, now)}}
		ReadStory(next)
		if d.Attempt > MaxAttempt {
			t.Fatalf("attempt %d over MaxAttempt from %q", d.Attempt, s)
		}
		if want := min(d.Attempt+1, MaxAttempt); next.Attempt != want {
			t.Fatalf("after a retry of attempt %d the next reads attempt %d, want %d (headers %q)", d.Attempt, next.Attempt, want, s)
		}
		if d.FirstFailureAt.IsZero() && !next.FirstFailureAt.Equal(now) {
			t.Fatalf("first failure of the retry = %s, want %s", next.FirstFailureAt, now)
		}
	})
}
