package mem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/retrypolicy"
)

// TestInject: a message written as another producer would (no id, no
// header, nil key and value) reaches the handler with an id derived for
// it, nil key and value and an empty header map, and its dead letter
// keeps that id and nothing it did not have.
func TestInject(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	var got []broker.Delivery
	var mu sync.Mutex
	rec := &calls{clock: clk}
	h := rec.handler(func(d *broker.Delivery) error {
		mu.Lock()
		got = append(got, *d)
		mu.Unlock()
		if d.Headers == nil {
			return errors.New("nil Headers") // writing one would panic
		}
		return broker.Permanent(boom("no payload"))
	})
	start(t, b, sub("foreign", "reader", retrypolicy.Policy{MaxRetries: 2}), h)
	if err := srv.Inject("foreign", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	idle(t, srv)
	if len(got) != 1 {
		t.Fatalf("%d calls, want 1", len(got))
	}
	d := got[0]
	if d.ID == "" || d.Key != nil || d.Value != nil || len(d.Headers) != 0 || d.Attempt != 1 || d.Topic != "foreign" {
		t.Errorf("delivery id %q key %v value %v headers %v attempt %d topic %q; want a derived id, nil, nil, none, 1, foreign",
			d.ID, d.Key, d.Value, d.Headers, d.Attempt, d.Topic)
	}
	dls := srv.DeadLetters("foreign", "reader")
	if len(dls) != 1 || dls[0].MessageID != d.ID || dls[0].OriginalValue != nil || len(dls[0].OriginalHeaders) != 0 ||
		dls[0].Reason != string(driver.ReasonPermanent) {
		t.Errorf("dead letters %+v, want one permanent, id %s, nothing else", dls, d.ID)
	}
}

// TestRequeueKeepsAttempt: a handler's Requeue hands the message back
// with the same attempt, spending no retry, never dead-lettered for it.
func TestRequeueKeepsAttempt(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	rec := &calls{clock: clk}
	n := 0
	start(t, b, sub("jobs", "runner", retrypolicy.Policy{MaxRetries: 1}), rec.handler(func(d *broker.Delivery) error {
		if n++; n <= 5 {
			return broker.Requeue(boom("busy"))
		}
		return nil
	}))
	publish(t, b, "jobs", broker.Message{ID: "j1"})
	idle(t, srv)
	cs := rec.snapshot()
	if len(cs) != 6 || cs[5].err != nil {
		t.Fatalf("%d calls, the last %v; want 6, the last a success", len(cs), cs[len(cs)-1].err)
	}
	for _, c := range cs {
		if c.attempt != 1 {
			t.Errorf("a requeued delivery came back as attempt %d", c.attempt)
		}
	}
	if dls := srv.DeadLetters("jobs", "runner"); len(dls) != 0 {
		t.Errorf("dead letters %+v, want none", dls)
	}
}

// TestShutdownHandsBack: a handler still running after the shutdown
// timeout has its message handed back, redelivered to the next consumer;
// its late return changes nothing. With max claims and no counter the
// server's own delivery count catches the message that keeps killing its
// handler.
func TestShutdownHandsBack(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := sub("slow", "stuck", retrypolicy.Policy{})
	s.ShutdownTimeout, s.MaxClaims = 20*time.Millisecond, 1
	rec := &calls{clock: clk}
	returned := make(chan struct{})
	late := rec.handler(func(*broker.Delivery) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	stop := start(t, b, s, func(ctx context.Context, d *broker.Delivery) error {
		defer close(returned)
		return late(ctx, d)
	})
	publish(t, b, "slow", broker.Message{ID: "s1"})
	<-entered
	stop() // returns after the shutdown timeout, the handler still running
	if st := srv.Stats("slow", "stuck"); st.Due != 1 || st.InFlight != 0 {
		t.Errorf("after the shutdown timeout: %+v, want the message due again", st)
	}
	close(release)
	<-returned
	// The next consumer gets it redelivered, claimed a second time: over
	// max claims 1, it is dead-lettered without calling the handler.
	rec2 := &calls{clock: clk}
	start(t, b, s, rec2.handler(nil))
	idle(t, srv)
	if n := len(rec2.snapshot()); n != 0 {
		t.Errorf("the poison pill was handled %d times, want 0", n)
	}
	dls := srv.DeadLetters("slow", "stuck")
	if len(dls) != 1 || dls[0].Reason != string(driver.ReasonMaxClaims) {
		t.Fatalf("dead letters %+v, want one, max_claims", dls)
	}
	if h := rec.handled(); h["s1"] != 1 {
		t.Errorf("the first handler's late success was recorded %d times", h["s1"])
	}
	if st := srv.Stats("slow", "stuck"); st != (mem.Stats{DeadLetters: 1, Consumers: 1}) {
		t.Errorf("stats %+v: the late success changed something", st)
	}
}

// TestRedeliveredAfterShutdown: without max claims, a message handed
// back at the shutdown timeout is handled by the next consumer, marked
// redelivered.
func TestRedeliveredAfterShutdown(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := sub("slow", "stuck", retrypolicy.Policy{})
	s.ShutdownTimeout = 20 * time.Millisecond
	stop := start(t, b, s, func(context.Context, *broker.Delivery) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	publish(t, b, "slow", broker.Message{ID: "s1"})
	<-entered
	stop()
	defer close(release)
	rec := &calls{clock: clk}
	start(t, b, s, rec.handler(nil))
	idle(t, srv)
	if cs := rec.snapshot(); len(cs) != 1 || !cs[0].redelivered || cs[0].attempt != 1 {
		t.Errorf("calls %+v, want s1 once, redelivered, attempt 1", cs)
	}
}

// TestPauseAndProbe: a paused worker takes nothing until resumed; the
// prober says whether it consumes and what waits for it.
func TestPauseAndProbe(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	ctx := t.Context()
	if err := b.ConsumerReady(ctx, "payments", "payer"); !errors.Is(err, driver.ErrNotConsuming) {
		t.Errorf("ConsumerReady before Consume = %v, want ErrNotConsuming", err)
	}
	rec := &calls{clock: clk}
	b.PauseConsume("payments", "payer")
	start(t, b, sub("payments", "payer", retrypolicy.Policy{}), rec.handler(nil))
	if err := b.ConsumerReady(ctx, "payments", "payer"); err != nil {
		t.Errorf("ConsumerReady while consuming = %v", err)
	}
	publish(t, b, "payments", messages("p", 3)...)
	if lag, err := b.ConsumerLag(ctx, "payments", "payer"); err != nil || lag != 3 {
		t.Errorf("ConsumerLag = %d, %v; want 3", lag, err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := srv.Idle(short); err == nil || len(rec.snapshot()) != 0 {
		t.Errorf("paused: Idle = %v after %d calls; want not idle, no call", err, len(rec.snapshot()))
	}
	b.ResumeConsume("payments", "payer")
	idle(t, srv)
	if n := len(rec.handled()); n != 3 {
		t.Errorf("%d handled after resume, want 3", n)
	}
}

// TestQueueFull: a publish that would grow a queue over its bound fails
// with ErrQueueFull and publishes nothing.
func TestQueueFull(t *testing.T) {
	srv, b, _ := newServer(t, mem.ServerConfig{MaxQueueLength: 3})
	if err := b.Declare(t.Context(), sub("bounded", "w", retrypolicy.Policy{})); err != nil {
		t.Fatal(err)
	}
	publish(t, b, "bounded", messages("q", 2)...)
	if err := b.Publish(t.Context(), "bounded", messages("r", 2)...); !errors.Is(err, mem.ErrQueueFull) {
		t.Errorf("Publish over the bound = %v, want ErrQueueFull", err)
	}
	if st := srv.Stats("bounded", "w"); st.Due != 2 {
		t.Errorf("stats %+v, want the first two alone", st)
	}
	if _, err := mem.NewServer(mem.ServerConfig{MaxQueueLength: -1}); !errors.Is(err, driver.ErrInvalidConfig) {
		t.Errorf("NewServer(MaxQueueLength -1) = %v, want ErrInvalidConfig", err)
	}
}

// TestRefused: what the broker refuses: a share-mode subscription, an
// invalid one, a nil handler, a closed broker, two workers whose queue
// names clash, a replay to nowhere.
func TestRefused(t *testing.T) {
	_, b, _ := newServer(t, mem.ServerConfig{})
	ctx := t.Context()
	share := sub("t", "g", retrypolicy.Policy{})
	share.RetryMode = broker.Share
	if err := b.Declare(ctx, share); !errors.Is(err, broker.ErrInvalidSubscription) {
		t.Errorf("Declare(share) = %v, want ErrInvalidSubscription", err)
	}
	if err := b.Consume(ctx, broker.Subscription{Topic: "t"}, func(context.Context, *broker.Delivery) error { return nil }); !errors.Is(err, broker.ErrInvalidSubscription) {
		t.Errorf("Consume(no group) = %v, want ErrInvalidSubscription", err)
	}
	if err := b.Consume(ctx, sub("t", "g", retrypolicy.Policy{}), nil); !errors.Is(err, broker.ErrInvalidSubscription) {
		t.Errorf("Consume(nil handler) = %v, want ErrInvalidSubscription", err)
	}
	if err := b.Declare(ctx, sub("a.b", "c", retrypolicy.Policy{}), sub("a", "b.c", retrypolicy.Policy{})); !errors.Is(err, driver.ErrInvalidConfig) {
		t.Errorf("Declare of clashing queue names = %v, want ErrInvalidConfig", err)
	}
	rt := mem.Router{}.Route("nowhere", "nobody")
	if err := b.Republish(ctx, driver.Entry{MessageID: "x"}, rt, "dlq/1"); !errors.Is(err, mem.ErrNoQueue) {
		t.Errorf("Republish to an undeclared queue = %v, want ErrNoQueue", err)
	}
	_ = b.Close()
	if err := b.Publish(ctx, "t", broker.Message{}); !errors.Is(err, mem.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
}
