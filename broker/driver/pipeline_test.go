package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
)

// memCounter is a claim counter in memory (the Redis one is tested in
// broker/claims).
type memCounter struct {
	n        map[string]int64
	released []string
	err      error
}

func (c *memCounter) Claim(_ context.Context, key string) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.n[key]++
	return c.n[key], nil
}

func (c *memCounter) Release(_ context.Context, key string) error {
	c.released = append(c.released, key)
	delete(c.n, key)
	return nil
}

func newTestPipeline(sub broker.Subscription) (*Pipeline, *bytes.Buffer) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return NewPipeline(sub, log), &buf
}

func TestProcessDecides(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		h       broker.Handler
		attempt int
		want    Action
		reason  Reason
		class   string
	}{
		{"success acks", func(context.Context, *broker.Delivery) error { return nil }, 1, ActionAck, "", ""},
		{"failure retries", func(context.Context, *broker.Delivery) error { return boom }, 1, ActionRetry, "", "error"},
		{"exhausted dead-letters", func(context.Context, *broker.Delivery) error { return boom }, 4, ActionDeadLetter, ReasonMaxRetries, "error"},
		{"permanent dead-letters", func(context.Context, *broker.Delivery) error { return broker.Permanent(boom) }, 1, ActionDeadLetter, ReasonPermanent, "error"},
		{"panic is recovered", func(context.Context, *broker.Delivery) error { panic("nil map") }, 1, ActionRetry, "", broker.ClassPanic},
		{"stopped leaves it", func(context.Context, *broker.Delivery) error { return ErrStopped }, 1, ActionStop, "", ""},
		{"requeue hands it back", func(context.Context, *broker.Delivery) error { return broker.Requeue(boom) }, 1, ActionRequeue, "", "error"},
		{"requeue at the last attempt is no dead letter", func(context.Context, *broker.Delivery) error {
			return fmt.Errorf("shutting down: %w", broker.Requeue(boom))
		}, 4, ActionRequeue, "", "error"},
		{"requeue of a permanent error is still a requeue", func(context.Context, *broker.Delivery) error { return broker.Requeue(broker.Permanent(boom)) }, 1, ActionRequeue, "", "error"},
		{"a handler changing its delivery does not change the decision", func(_ context.Context, d *broker.Delivery) error {
			d.Attempt = 1
			return boom
		}, 4, ActionDeadLetter, ReasonMaxRetries, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestPipeline(testSub(threeRetries))
			dec := p.Process(t.Context(), &broker.Delivery{Attempt: tt.attempt, Offset: -1}, tt.h, Input{})
			if dec.Action != tt.want || dec.Outcome.Reason != tt.reason || dec.Outcome.Class != tt.class {
				t.Fatalf("Process = %v %+v, want %v reason %q class %q", dec.Action, dec.Outcome, tt.want, tt.reason, tt.class)
			}
			if (dec.Action == ActionRetry || dec.Action == ActionDeadLetter || dec.Action == ActionRequeue) && (dec.Cause == nil || dec.At.IsZero()) {
				t.Errorf("a failure decision has cause %v, at %v", dec.Cause, dec.At)
			}
			if dec.Action == ActionRequeue && (!strings.HasSuffix(dec.Outcome.Error, "boom") || dec.Outcome.Retry || dec.Outcome.Delay != 0) {
				t.Errorf("requeue outcome = %+v, want the handler's text, no retry and no delay", dec.Outcome)
			}
			if tt.class == broker.ClassPanic {
				var pe *PanicError
				if !errors.As(dec.Cause, &pe) || len(pe.Stack) == 0 {
					t.Errorf("cause of a panic = %v, want a *PanicError with a stack", dec.Cause)
				}
			}
		})
	}
}

func TestProcessMaxAge(t *testing.T) {
	sub := testSub(threeRetries)
	sub.MaxAge = time.Minute
	p, logs := newTestPipeline(sub)
	called := false
	h := func(context.Context, *broker.Delivery) error { called = true; return nil }
	d := &broker.Delivery{Message: broker.Message{ID: "m1"}, Attempt: 1, Offset: 7}
	dec := p.Process(t.Context(), d, h, Input{Born: time.Now().Add(-2 * time.Minute)})
	if called || dec.Action != ActionDeadLetter || dec.Outcome.Reason != ReasonExpired || dec.Outcome.Class != ClassExpired || dec.Cause != nil {
		t.Fatalf("expired: called %v, %v %+v; want a dead letter, reason expired, handler not called", called, dec.Action, dec.Outcome)
	}
	for _, kv := range []string{"message_id=m1", "offset=7", "reason=expired", "error_class=expired", "age="} {
		if !strings.Contains(logs.String(), kv) {
			t.Errorf("log %q lacks %s", logs.String(), kv)
		}
	}
	if dec := p.Process(t.Context(), d, h, Input{Born: time.Now()}); !called || dec.Action != ActionAck {
		t.Errorf("young: called %v, %v; want an ack", called, dec.Action)
	}
	called = false
	if dec := p.Process(t.Context(), d, h, Input{}); !called || dec.Action != ActionAck {
		t.Errorf("no birth time: called %v, %v; want an ack (age not checked)", called, dec.Action)
	}
}

// TestProcessClock: a pipeline on a clock of its own (SetClock) decides
// at that clock's time, counts a message's age to it for MaxAge and the
// policy's elapsed budget to it; nil restores the wall clock.
func TestProcessClock(t *testing.T) {
	sub := testSub(threeRetries) // MaxElapsed: an hour
	sub.MaxAge = time.Minute
	p, _ := newTestPipeline(sub)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	p.SetClock(func() time.Time { return at })
	fail := func(context.Context, *broker.Delivery) error { return errors.New("boom") }
	d := &broker.Delivery{Message: broker.Message{ID: "m1"}, Attempt: 1, Offset: -1}
	if dec := p.Process(t.Context(), d, fail, Input{Born: at.Add(-59 * time.Second)}); dec.Action != ActionRetry || !dec.At.Equal(at) {
		t.Errorf("young on the clock: %v at %v, want a retry at %v", dec.Action, dec.At, at)
	}
	if dec := p.Process(t.Context(), d, fail, Input{Born: at.Add(-61 * time.Second)}); dec.Action != ActionDeadLetter || dec.Outcome.Reason != ReasonExpired {
		t.Errorf("old on the clock: %v %+v, want a dead letter, reason expired", dec.Action, dec.Outcome)
	}
	late := &broker.Delivery{Message: broker.Message{ID: "m2"}, Attempt: 2, Offset: -1, FirstFailureAt: at.Add(-2 * time.Hour)}
	if dec := p.Process(t.Context(), late, fail, Input{}); dec.Action != ActionDeadLetter || dec.Outcome.Reason != ReasonMaxRetries {
		t.Errorf("over the elapsed budget on the clock: %v %+v, want a dead letter, reason max_retries", dec.Action, dec.Outcome)
	}
	p.SetClock(nil)
	if dec := p.Process(t.Context(), d, fail, Input{}); time.Since(dec.At) > time.Minute {
		t.Errorf("after SetClock(nil) the decision is at %v, want the wall clock's now", dec.At)
	}
}

// TestProcessUndecodable: a delivery whose properties the broker client
// could not decode is dead-lettered first, reason undecodable, whatever
// its age and claims, without calling the handler or counting a claim;
// the reason says why, cut to MaxErrorLen.
func TestProcessUndecodable(t *testing.T) {
	c := &memCounter{n: map[string]int64{}}
	sub := testSub(threeRetries)
	sub.MaxAge, sub.MaxClaims, sub.Claims = time.Minute, 1, c
	p, logs := newTestPipeline(sub)
	called := false
	h := func(context.Context, *broker.Delivery) error { called = true; return nil }
	why := "the headers nest tables more than 32 levels deep" + strings.Repeat("!", 2*MaxErrorLen)
	dec := p.Process(t.Context(), &broker.Delivery{Message: broker.Message{ID: "m1"}, Attempt: 1, Offset: -1}, h,
		Input{Undecodable: why, Born: time.Now().Add(-time.Hour), ClaimKey: "k"})
	if called || dec.Action != ActionDeadLetter || dec.Outcome.Reason != ReasonUndecodable || dec.Outcome.Class != ClassUndecodable ||
		!strings.HasPrefix(dec.Outcome.Error, "the headers nest") || len(dec.Outcome.Error) != MaxErrorLen || dec.Cause != nil || dec.At.IsZero() {
		t.Fatalf("undecodable: called %v, %v %+v; want a dead letter, reason undecodable, the reason cut, handler not called", called, dec.Action, dec.Outcome)
	}
	if len(c.n) != 0 {
		t.Errorf("claims counted %v, want none", c.n)
	}
	for _, kv := range []string{"message_id=m1", "reason=undecodable", "error_class=undecodable"} {
		if !strings.Contains(logs.String(), kv) {
			t.Errorf("log %q lacks %s", logs.String(), kv)
		}
	}
}

func TestProcessClaims(t *testing.T) {
	c := &memCounter{n: map[string]int64{}}
	sub := testSub(threeRetries)
	sub.MaxClaims, sub.Claims = 2, c
	p, logs := newTestPipeline(sub)
	calls := 0
	h := func(context.Context, *broker.Delivery) error { calls++; return nil }
	d := &broker.Delivery{Attempt: 1, Offset: -1}
	var decs []Decision
	for range 3 {
		decs = append(decs, p.Process(t.Context(), d, h, Input{ClaimKey: "k"}))
	}
	if calls != 2 || decs[2].Action != ActionDeadLetter || decs[2].Outcome.Reason != ReasonMaxClaims {
		t.Fatalf("handler calls %d, third %v %+v; want 2 calls, then a max_claims dead letter", calls, decs[2].Action, decs[2].Outcome)
	}
	if !strings.Contains(logs.String(), "claims=3") {
		t.Errorf("log %q lacks claims=3", logs.String())
	}
	p.Release(t.Context(), decs[2])
	if len(c.released) != 1 || c.released[0] != "k" {
		t.Errorf("released %v, want [k]", c.released)
	}
	// The broker's own count, when there is no key.
	if dec := p.Process(t.Context(), d, h, Input{NativeClaims: 3}); dec.Action != ActionDeadLetter || calls != 2 {
		t.Errorf("native count 3: %v, calls %d; want a dead letter without a call", dec.Action, calls)
	}
	// A counter error runs the handler (never stall).
	c.err = errors.New("redis down")
	if dec := p.Process(t.Context(), d, h, Input{ClaimKey: "k"}); dec.Action != ActionAck || calls != 3 {
		t.Errorf("counter down: %v, calls %d; want an ack after a call", dec.Action, calls)
	}
}

func TestProcessLogKeys(t *testing.T) {
	p, logs := newTestPipeline(testSub(threeRetries))
	d := &broker.Delivery{Message: broker.Message{ID: "m9"}, Attempt: 4, Offset: -1}
	p.Process(t.Context(), d, func(context.Context, *broker.Delivery) error { return errors.New("db down") }, Input{})
	out := logs.String()
	for _, kv := range []string{"msg=dead-lettering", "message_id=m9", "attempt=4", "reason=max_retries", "error_class=error", `error="db down"`} {
		if !strings.Contains(out, kv) {
			t.Errorf("log %q lacks %s", out, kv)
		}
	}
	if strings.Contains(out, "offset=") {
		t.Errorf("log %q has an offset for a delivery without one", out)
	}
}

func TestWarnUncountedClaims(t *testing.T) {
	for _, tt := range []struct {
		name   string
		sub    broker.Subscription
		native bool
		warn   bool
	}{
		{"chosen, uncounted", broker.Subscription{MaxClaims: 3}, false, true},
		{"default, uncounted", broker.Subscription{MaxClaims: 3, MaxClaimsDefault: true}, false, false},
		{"native count", broker.Subscription{MaxClaims: 3}, true, false},
		{"counter", broker.Subscription{MaxClaims: 3, Claims: &memCounter{}}, false, false},
		{"off", broker.Subscription{}, false, false},
	} {
		p, logs := newTestPipeline(tt.sub)
		p.WarnUncountedClaims(tt.native)
		if got := logs.Len() > 0; got != tt.warn {
			t.Errorf("%s: warned %v, want %v", tt.name, got, tt.warn)
		}
	}
}

// A recovered panic is of class "panic", however it is wrapped.
func TestPanicErrorClass(t *testing.T) {
	for _, err := range []error{
		&PanicError{Value: "oops"},
		fmt.Errorf("x: %w", &PanicError{Value: 1}),
		broker.Permanent(&PanicError{Value: 1}),
		broker.RetryAfter(fmt.Errorf("y: %w", &PanicError{Value: 2}), time.Second),
	} {
		if got := broker.ErrorClass(err); got != broker.ClassPanic {
			t.Errorf("ErrorClass(%v) = %q, want %q", err, got, broker.ClassPanic)
		}
	}
	err := &PanicError{Value: "index out of range", Stack: []byte("goroutine 1")}
	if got, want := err.Error(), "handler panic: index out of range"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
