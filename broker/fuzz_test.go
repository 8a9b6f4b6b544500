package broker

import (
	"strings"
	"testing"
	"time"
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
		HeaderAttempt + "=3\n" + HeaderFirstFailureAt + "=2025-01-15T10:30:00.000Z\n" + HeaderError + "=boom",
		HeaderAttempt + "=-7\n" + HeaderLastFailureAt + "=yesterday",
		HeaderAttempt + "=9223372036854775807",
		HeaderAttempt + "=99999999999999999999999\n" + HeaderFirstFailureAt + "=9999-12-31T23:59:59Z",
		HeaderAttempt + "=+4\n" + HeaderFirstFailureAt + "=0000-01-01T00:00:00Z",
		HeaderAttempt + "= 2\n" + HeaderError + "=\xff\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := &Delivery{Message: Message{Headers: fuzzHeaders(s)}, Group: "g"}
		ReadStory(d)
		if d.Attempt < 1 {
			t.Fatalf("attempt %d from %q", d.Attempt, s)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		next := &Delivery{Message: Message{Headers: FailureHeaders(d, Outcome{Retry: true}, now)}}
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
