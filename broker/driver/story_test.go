package driver

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/retrypolicy"
)

// classErr names its own class.
type classErr struct{ class string }

func (e *classErr) Error() string      { return "classified" }
func (e *classErr) ErrorClass() string { return e.class }

// typedErr is classed by its type name.
type typedErr struct{ code int }

func (e *typedErr) Error() string { return fmt.Sprintf("code %d", e.code) }

func testSub(p retrypolicy.Policy) broker.Subscription {
	return broker.Subscription{Topic: "orders", Group: "billing", Policy: p}
}

var threeRetries = retrypolicy.Policy{
	MaxRetries:   3,
	Backoff:      retrypolicy.Schedule{Delays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}},
	NonRetriable: []string{"validation"},
	MaxElapsed:   time.Hour,
}

func TestDecide(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	boom := errors.New("boom")
	tests := []struct {
		name    string
		attempt int
		first   time.Time
		err     error
		want    Outcome
	}{
		{"first failure retries", 1, time.Time{}, boom,
			Outcome{Retry: true, Delay: time.Second, Class: "error", Error: "boom"}},
		{"attempt 0 counts as the first", 0, time.Time{}, boom,
			Outcome{Retry: true, Delay: time.Second, Class: "error", Error: "boom"}},
		{"second failure", 2, now.Add(-time.Second), boom,
			Outcome{Retry: true, Delay: 5 * time.Second, Class: "error", Error: "boom"}},
		{"last retry", 3, now.Add(-time.Minute), boom,
			Outcome{Retry: true, Delay: 30 * time.Second, Class: "error", Error: "boom"}},
		{"retries exhausted", 4, now.Add(-time.Minute), boom,
			Outcome{Reason: ReasonMaxRetries, Class: "error", Error: "boom"}},
		{"permanent", 1, time.Time{}, broker.Permanent(boom),
			Outcome{Reason: ReasonPermanent, Class: "error", Error: "boom"}},
		{"wrapped permanent", 2, now, fmt.Errorf("order 7: %w", broker.Permanent(&typedErr{code: 3})),
			Outcome{Reason: ReasonPermanent, Class: "driver.typedErr", Error: "order 7: permanent: code 3"}},
		{"non-retriable class", 1, time.Time{}, &classErr{class: "validation"},
			Outcome{Reason: ReasonPermanent, Class: "validation", Error: "classified"}},
		{"retry after overrides the delay", 1, time.Time{}, broker.RetryAfter(boom, 10*time.Minute),
			Outcome{Retry: true, Delay: 10 * time.Minute, Class: "error", Error: "boom"}},
		{"retry after shorter than the policy", 3, now, broker.RetryAfter(boom, time.Millisecond),
			Outcome{Retry: true, Delay: time.Millisecond, Class: "error", Error: "boom"}},
		{"negative retry after means now", 1, time.Time{}, broker.RetryAfter(boom, -time.Second),
			Outcome{Retry: true, Delay: 0, Class: "error", Error: "boom"}},
		{"retry after does not add retries", 4, now, broker.RetryAfter(boom, time.Second),
			Outcome{Reason: ReasonMaxRetries, Class: "error", Error: "boom"}},
		{"permanent retry after is permanent", 1, time.Time{}, broker.RetryAfter(broker.Permanent(boom), time.Second),
			Outcome{Reason: ReasonPermanent, Class: "error", Error: "boom"}},
		{"max elapsed", 2, now.Add(-2 * time.Hour), boom,
			Outcome{Reason: retrypolicy.ReasonMaxElapsed, Class: "error", Error: "boom"}},
		{"just under max elapsed", 2, now.Add(-time.Hour + time.Second), boom,
			Outcome{Retry: true, Delay: 5 * time.Second, Class: "error", Error: "boom"}},
		{"panic", 1, time.Time{}, &PanicError{Value: "nil map"},
			Outcome{Retry: true, Delay: time.Second, Class: broker.ClassPanic, Error: "handler panic: nil map"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &broker.Delivery{Attempt: tt.attempt, FirstFailureAt: tt.first}
			if got := Decide(testSub(threeRetries), d, tt.err, now); got != tt.want {
				t.Errorf("Decide() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecideZeroPolicyDeadLettersAtOnce(t *testing.T) {
	o := Decide(testSub(retrypolicy.Policy{}), &broker.Delivery{Attempt: 1}, errors.New("x"), time.Now())
	if o.Retry || o.Reason != ReasonMaxRetries {
		t.Errorf("Decide() = %+v, want a dead letter with reason %q", o, ReasonMaxRetries)
	}
}

func TestDecideTruncatesError(t *testing.T) {
	long := strings.Repeat("é", MaxErrorLen) // 2 bytes a rune
	o := Decide(testSub(threeRetries), &broker.Delivery{Attempt: 1}, errors.New("x"+long), time.Now())
	if len(o.Error) > MaxErrorLen {
		t.Errorf("len(Error) = %d, want at most %d", len(o.Error), MaxErrorLen)
	}
	if len(o.Error) < MaxErrorLen-utf8.UTFMax {
		t.Errorf("len(Error) = %d, cut too short", len(o.Error))
	}
	if !utf8.ValidString(o.Error) {
		t.Errorf("Error was cut inside a rune")
	}
	if !strings.HasPrefix("x"+long, o.Error) {
		t.Errorf("Error is not a prefix of the error text")
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"},  // é is 2 bytes; cutting at 2 would split it
		{"héllo", 3, "hé"}, // cut right after é
		{"日本", 4, "日"},
		{"日本", 2, ""},
		{"", 0, ""},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// TestFailureStory drives one message through failures the way a backend
// does — ReadStory, Decide, FailureHeaders, publish the copy — and checks
// the story the headers tell.
func TestFailureStory(t *testing.T) {
	sub := testSub(threeRetries)
	app := map[string]string{"traceparent": "00-abc-def-01", "content-type": "application/json"}
	headers := maps.Clone(app)
	t0 := time.Date(2025, 1, 15, 10, 30, 0, 123456789, time.UTC)
	first := t0.Truncate(time.Millisecond)

	for attempt := 1; ; attempt++ {
		d := &broker.Delivery{Message: broker.Message{Headers: headers}, Topic: "orders", Group: "billing", Source: "orders.billing"}
		ReadStory(d)
		if d.Attempt != attempt {
			t.Fatalf("delivery %d: Attempt = %d", attempt, d.Attempt)
		}
		if attempt == 1 {
			if !d.FirstFailureAt.IsZero() || !d.LastFailureAt.IsZero() || d.LastError != "" {
				t.Fatalf("first delivery has a story: %+v", d)
			}
		} else {
			if !d.FirstFailureAt.Equal(first) {
				t.Fatalf("delivery %d: FirstFailureAt = %v, want %v", attempt, d.FirstFailureAt, first)
			}
			wantLast := t0.Add(time.Duration(attempt-2) * time.Minute).Truncate(time.Millisecond)
			if !d.LastFailureAt.Equal(wantLast) {
				t.Fatalf("delivery %d: LastFailureAt = %v, want %v", attempt, d.LastFailureAt, wantLast)
			}
			if want := fmt.Sprintf("failure %d", attempt-1); d.LastError != want {
				t.Fatalf("delivery %d: LastError = %q, want %q", attempt, d.LastError, want)
			}
		}

		now := t0.Add(time.Duration(attempt-1) * time.Minute)
		before := maps.Clone(d.Headers)
		o := Decide(sub, d, fmt.Errorf("failure %d", attempt), now)
		h := FailureHeaders(d, o, now)
		if !maps.Equal(d.Headers, before) {
			t.Fatalf("FailureHeaders changed the delivery's headers")
		}
		if got := AppHeaders(h); !maps.Equal(got, app) {
			t.Fatalf("delivery %d: app headers = %v, want %v", attempt, got, app)
		}
		for k, want := range map[string]string{
			broker.HeaderFirstFailureAt: wire.FormatTime(first),
			broker.HeaderLastFailureAt:  wire.FormatTime(now),
			broker.HeaderError:          fmt.Sprintf("failure %d", attempt),
			broker.HeaderErrorClass:     "error",
			broker.HeaderWorker:         "billing",
			broker.HeaderSource:         "orders.billing",
			HeaderTopic:                 "orders",
		} {
			if h[k] != want {
				t.Errorf("delivery %d: %s = %q, want %q", attempt, k, h[k], want)
			}
		}
		if o.Retry {
			if got, want := h[broker.HeaderAttempt], strconv.Itoa(attempt+1); got != want {
				t.Fatalf("delivery %d retried: %s = %q, want %q", attempt, broker.HeaderAttempt, got, want)
			}
			if _, ok := h[broker.HeaderReason]; ok {
				t.Fatalf("delivery %d retried with a reason %q", attempt, h[broker.HeaderReason])
			}
			headers = h
			continue
		}
		// Dead-lettered after MaxRetries retries.
		if attempt != threeRetries.MaxRetries+1 {
			t.Fatalf("dead-lettered on delivery %d, want %d", attempt, threeRetries.MaxRetries+1)
		}
		if got, want := h[broker.HeaderAttempt], strconv.Itoa(attempt); got != want {
			t.Errorf("dead letter: %s = %q, want %q", broker.HeaderAttempt, got, want)
		}
		if h[broker.HeaderReason] != string(ReasonMaxRetries) {
			t.Errorf("dead letter: %s = %q, want %q", broker.HeaderReason, h[broker.HeaderReason], ReasonMaxRetries)
		}
		break
	}
}

func TestFailureHeadersRetryClearsReason(t *testing.T) {
	// A replayed dead letter carries the reason of its first life; a retry
	// in its new life must not keep it.
	d := &broker.Delivery{Message: broker.Message{Headers: map[string]string{broker.HeaderReason: string(ReasonMaxRetries), broker.HeaderAttempt: "1"}}, Group: "g"}
	ReadStory(d)
	now := time.Now()
	h := FailureHeaders(d, Outcome{Retry: true, Delay: time.Second, Class: "error", Error: "x"}, now)
	if _, ok := h[broker.HeaderReason]; ok {
		t.Errorf("retry kept %s", broker.HeaderReason)
	}
	h = FailureHeaders(d, Outcome{Reason: ReasonPermanent, Class: "error", Error: "x"}, now)
	if h[broker.HeaderReason] != string(ReasonPermanent) {
		t.Errorf("dead letter: %s = %q, want %q", broker.HeaderReason, h[broker.HeaderReason], ReasonPermanent)
	}
}

func TestFailureHeadersNilHeadersAndNoSource(t *testing.T) {
	d := &broker.Delivery{Group: "g"}
	ReadStory(d)
	now := time.Date(2025, 1, 15, 10, 30, 0, 0, time.FixedZone("CET", 3600))
	h := FailureHeaders(d, Outcome{Retry: true, Class: "error", Error: "x"}, now)
	if h[broker.HeaderAttempt] != "2" {
		t.Errorf("%s = %q, want 2", broker.HeaderAttempt, h[broker.HeaderAttempt])
	}
	if got, want := h[broker.HeaderFirstFailureAt], "2025-01-15T09:30:00.000Z"; got != want {
		t.Errorf("%s = %q, want %q (UTC)", broker.HeaderFirstFailureAt, got, want)
	}
	for _, k := range []string{broker.HeaderSource, HeaderTopic} {
		if _, ok := h[k]; ok {
			t.Errorf("%s set without a value", k)
		}
	}
}

func TestReadStoryMalformed(t *testing.T) {
	for _, attempt := range []string{"", "0", "-3", "two", "1.5", "99999999999999999999"} {
		d := &broker.Delivery{Message: broker.Message{Headers: map[string]string{
			broker.HeaderAttempt:        attempt,
			broker.HeaderFirstFailureAt: "yesterday",
			broker.HeaderLastFailureAt:  "2025-13-45T99:00:00Z",
			broker.HeaderError:          "last",
		}}}
		ReadStory(d)
		if d.Attempt != 1 {
			t.Errorf("attempt %q: Attempt = %d, want 1", attempt, d.Attempt)
		}
		if !d.FirstFailureAt.IsZero() || !d.LastFailureAt.IsZero() {
			t.Errorf("attempt %q: malformed times parsed to %v, %v", attempt, d.FirstFailureAt, d.LastFailureAt)
		}
		if d.LastError != "last" {
			t.Errorf("LastError = %q", d.LastError)
		}
	}
}

func TestAppHeaders(t *testing.T) {
	in := map[string]string{
		"content-type":                "application/json",
		"x-request-id":                "r1",
		"X-Redrive-Attempt":           "case matters", // not ours: header names are case-sensitive
		broker.HeaderAttempt:          "3",
		broker.HeaderError:            "boom",
		broker.HeaderReplayedFrom:     "orders.dlq/0-12",
		broker.HeaderRemainingDelay:   "1000",
		broker.HeaderPrefix + "other": "x",
		"":                            "empty name",
	}
	want := map[string]string{
		"content-type":      "application/json",
		"x-request-id":      "r1",
		"X-Redrive-Attempt": "case matters",
		"":                  "empty name",
	}
	got := AppHeaders(in)
	if !maps.Equal(got, want) {
		t.Errorf("AppHeaders() = %v, want %v", got, want)
	}
	got["new"] = "x"
	if _, ok := in["new"]; ok {
		t.Error("AppHeaders returned its input")
	}
	if got := AppHeaders(nil); got == nil || len(got) != 0 {
		t.Errorf("AppHeaders(nil) = %#v, want an empty map", got)
	}
}

func BenchmarkFailureHeaders(b *testing.B) {
	d := &broker.Delivery{
		Message: broker.Message{Headers: map[string]string{
			"content-type": "application/json", "traceparent": "00-abc-def-01",
			broker.HeaderAttempt: "2", broker.HeaderFirstFailureAt: "2025-01-15T10:30:00.000Z",
		}},
		Topic: "orders", Group: "billing", Source: "orders.billing",
	}
	ReadStory(d)
	o := Outcome{Retry: true, Delay: time.Second, Class: "error", Error: "boom"}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		FailureHeaders(d, o, now)
	}
}

// ReadStory of a first delivery (no story headers) is on every delivery's
// path: it must not allocate (strconv.Atoi("") allocates its error).
func TestReadStoryFirstDeliveryAllocatesNothing(t *testing.T) {
	d := &broker.Delivery{Message: broker.Message{Headers: map[string]string{"app": "v"}}}
	if n := testing.AllocsPerRun(100, func() { ReadStory(d) }); n != 0 {
		t.Errorf("ReadStory allocated %.0f times per call, want 0", n)
	}
	if d.Attempt != 1 {
		t.Errorf("Attempt = %d, want 1", d.Attempt)
	}
}

// RetryInPlace must leave a delivery exactly as FailureHeaders then
// ReadStory do (the blocking retry's old path), for first and later
// deliveries, the attempt cap, foreign story headers and on-demand headers.
func TestRetryInPlaceAsFailureHeadersThenReadStory(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	now := time.Date(2025, 1, 15, 10, 30, 0, 123456789, cet)
	tests := []struct {
		name     string
		headers  map[string]string
		onDemand bool
		o        Outcome
	}{
		{"first delivery", map[string]string{"app": "v"}, false, Outcome{Retry: true, Class: "error", Error: "boom"}},
		{"no headers", nil, false, Outcome{Retry: true, Class: "error"}},
		{"later attempt", map[string]string{
			broker.HeaderAttempt: "3", broker.HeaderFirstFailureAt: "2025-01-15T09:00:00.987654Z",
			broker.HeaderLastFailureAt: "2025-01-15T09:10:00.000Z", broker.HeaderError: "old", "app": "v",
		}, false, Outcome{Retry: true, Class: "timeout", Error: "new"}},
		{"attempt cap", map[string]string{broker.HeaderAttempt: strconv.Itoa(MaxAttempt + 5)}, false, Outcome{Retry: true, Error: "x"}},
		{"replayed dead letter", map[string]string{broker.HeaderReason: "max_retries", broker.HeaderAttempt: "1"}, false, Outcome{Retry: true, Error: "x"}},
		{"malformed story", map[string]string{broker.HeaderAttempt: "two", broker.HeaderFirstFailureAt: "yesterday"}, false, Outcome{Retry: true, Error: "x"}},
		{"on demand", map[string]string{"app": "v", broker.HeaderAttempt: "2", broker.HeaderFirstFailureAt: "2025-01-15T09:00:00.000Z"}, true, Outcome{Retry: true, Error: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := func() *broker.Delivery {
				d := &broker.Delivery{Topic: "orders", Group: "billing", Instance: "w-1", Source: "orders.billing"}
				if tt.onDemand {
					SetHeaderReader(d, mapReader(tt.headers))
				} else {
					d.Headers = maps.Clone(tt.headers)
				}
				ReadStory(d)
				return d
			}
			want := build()
			want.Headers = FailureHeaders(want, tt.o, now)
			ReadStory(want)
			got := build()
			RetryInPlace(got, tt.o, now)
			if !maps.Equal(got.Headers, want.Headers) {
				t.Errorf("Headers = %v, want %v", got.Headers, want.Headers)
			}
			if got.Attempt != want.Attempt || got.LastError != want.LastError {
				t.Errorf("Attempt, LastError = %d, %q, want %d, %q", got.Attempt, got.LastError, want.Attempt, want.LastError)
			}
			if got.FirstFailureAt != want.FirstFailureAt || got.LastFailureAt != want.LastFailureAt {
				t.Errorf("failure times = %v, %v, want %v, %v", got.FirstFailureAt, got.LastFailureAt, want.FirstFailureAt, want.LastFailureAt)
			}
		})
	}
}

// mapReader is a HeaderReader over a map, as a backend's on-demand
// headers.
type mapReader map[string]string

func (m mapReader) Header(name string) (string, bool) { v, ok := m[name]; return v, ok }

func (m mapReader) Range(f func(key, value string) bool) {
	for k, v := range m {
		if !f(k, v) {
			return
		}
	}
}

func BenchmarkRetryInPlace(b *testing.B) {
	h := map[string]string{
		"content-type": "application/json", "traceparent": "00-abc-def-01",
		broker.HeaderAttempt: "2", broker.HeaderFirstFailureAt: "2025-01-15T10:30:00.000Z",
	}
	o := Outcome{Retry: true, Delay: time.Second, Class: "error", Error: "boom"}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		d := &broker.Delivery{Message: broker.Message{Headers: maps.Clone(h)}, Topic: "orders", Group: "billing", Source: "orders.billing"}
		ReadStory(d)
		RetryInPlace(d, o, now)
	}
}
