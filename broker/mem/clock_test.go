package mem_test

import (
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/retrypolicy"
)

// TestRetriesOnTheClock: a retry comes back exactly when its back-off
// ended on the clock, not a moment earlier, without anyone sleeping; the
// dead letter after the last retry carries its whole story, its failure
// times the clock's.
func TestRetriesOnTheClock(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	rec := &calls{clock: clk}
	s := sub("orders", "billing", retrypolicy.Policy{MaxRetries: 2, Backoff: backoff(time.Hour, 2*time.Hour)})
	start(t, b, s, rec.handler(func(d *broker.Delivery) error { return boom("attempt %d", d.Attempt) }))
	publish(t, b, "orders", broker.Message{ID: "m1", Key: []byte("k"), Value: []byte("v"), Headers: map[string]string{"tenant": "acme"}})

	steps := []struct {
		advance time.Duration
		calls   int
	}{{0, 1}, {time.Hour - time.Nanosecond, 1}, {time.Nanosecond, 2}, {2*time.Hour - time.Second, 2}, {time.Second, 3}}
	for _, st := range steps {
		clk.Advance(st.advance)
		idle(t, srv)
		if got := len(rec.snapshot()); got != st.calls {
			t.Fatalf("at %s: %d calls, want %d", clk.Now().Sub(t0), got, st.calls)
		}
	}
	for i, c := range rec.snapshot() {
		if c.attempt != i+1 {
			t.Errorf("call %d: attempt %d", i+1, c.attempt)
		}
	}
	dls := srv.DeadLetters("orders", "billing")
	if len(dls) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(dls))
	}
	e := dls[0]
	if e.MessageID != "m1" || e.Reason != string(driver.ReasonMaxRetries) || e.RetryCount != 2 || e.ErrorClass != "test.Boom" ||
		e.ErrorMessage != "attempt 3" || e.Worker != "billing" || e.WorkerInstance != "test-1" || e.Source != mem.QueueName("orders", "billing") ||
		e.OriginalTopic != "orders" || string(e.OriginalKey) != "k" || string(e.OriginalValue) != "v" || len(e.OriginalHeaders) != 1 ||
		e.OriginalHeaders["tenant"] != "acme" {
		t.Errorf("dead letter %+v lacks its story", e)
	}
	if !e.FirstFailureAt.Equal(t0) || !e.LastFailureAt.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("failure times %v .. %v, want %v .. %v (the clock's)", e.FirstFailureAt, e.LastFailureAt, t0, t0.Add(3*time.Hour))
	}
	if st := srv.Stats("orders", "billing"); st != (mem.Stats{DeadLetters: 1, Consumers: 1}) {
		t.Errorf("stats %+v, want one dead letter and nothing else", st)
	}
}

// TestMaxAgeOnTheClock: a message that waited longer than the worker's
// max age on the clock is dead-lettered, reason expired, its handler not
// called; a younger one is handled.
func TestMaxAgeOnTheClock(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	s := sub("deadlines", "timer", retrypolicy.Policy{MaxRetries: 3})
	s.MaxAge = time.Minute
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "deadlines", broker.Message{ID: "stale"})
	clk.Advance(2 * time.Minute) // the worker is down longer than its max age
	publish(t, b, "deadlines", broker.Message{ID: "fresh"})
	rec := &calls{clock: clk}
	start(t, b, s, rec.handler(nil))
	idle(t, srv)
	if h := rec.handled(); len(h) != 1 || h["fresh"] != 1 {
		t.Errorf("handled %v, want fresh alone", h)
	}
	if dls := srv.DeadLetters("deadlines", "timer"); len(dls) != 1 || dls[0].MessageID != "stale" || dls[0].Reason != string(driver.ReasonExpired) {
		t.Errorf("dead letters %+v, want stale, expired", dls)
	}
}

// TestElapsedBudgetOnTheClock: the policy's elapsed budget counts on the
// clock: Drain advances through the back-offs until it is spent.
func TestElapsedBudgetOnTheClock(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	rec := &calls{clock: clk}
	p := retrypolicy.Policy{MaxRetries: 100, Backoff: backoff(10 * time.Minute), MaxElapsed: time.Hour}
	start(t, b, sub("payouts", "executor", p), rec.handler(func(*broker.Delivery) error { return boom("down") }))
	publish(t, b, "payouts", broker.Message{ID: "p1"})
	drain(t, srv)
	// Failures at 0, 10, ..., 60 minutes: the one at 60 spent the budget.
	if n := len(rec.snapshot()); n != 7 {
		t.Errorf("%d calls, want 7 (one every 10 minutes until an hour passed)", n)
	}
	if got := clk.Now().Sub(t0); got != time.Hour {
		t.Errorf("Drain advanced the clock %s, want 1h", got)
	}
	dls := srv.DeadLetters("payouts", "executor")
	if len(dls) != 1 || dls[0].Reason != string(driver.ReasonMaxRetries) || dls[0].RetryCount != 6 {
		t.Errorf("dead letters %+v, want one, max_retries after 6 retries", dls)
	}
}

// TestPublishDelayedOnTheClock: a delayed message is delivered once its
// delay passed on the clock, to every worker of its topic.
func TestPublishDelayedOnTheClock(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	recA, recB := &calls{clock: clk}, &calls{clock: clk}
	start(t, b, sub("reminders", "mailer", retrypolicy.Policy{}), recA.handler(nil))
	start(t, b, sub("reminders", "audit", retrypolicy.Policy{}), recB.handler(nil))
	if err := b.PublishDelayed(t.Context(), "reminders", 24*time.Hour, broker.Message{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(24*time.Hour - time.Millisecond)
	idle(t, srv)
	if n := len(recA.snapshot()) + len(recB.snapshot()); n != 0 {
		t.Fatalf("%d calls a millisecond early", n)
	}
	if st := srv.Stats("reminders", "mailer"); st.Delayed != 1 {
		t.Errorf("stats %+v, want one delayed", st)
	}
	clk.Advance(time.Millisecond)
	idle(t, srv)
	for _, c := range append(recA.snapshot(), recB.snapshot()...) {
		if !c.at.Equal(t0.Add(24 * time.Hour)) {
			t.Errorf("handled at %s, want at 24h", c.at.Sub(t0))
		}
	}
	if recA.handled()["r1"] != 1 || recB.handled()["r1"] != 1 {
		t.Errorf("handled %v and %v, want r1 once by each worker", recA.handled(), recB.handled())
	}
}
