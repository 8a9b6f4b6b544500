package mem_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/retrypolicy"
)

// quiet discards logs.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// t0 is the start of the tests' clocks.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newServer returns a Server on a new Clock at t0 and a quiet Broker of it.
func newServer(t *testing.T, cfg mem.ServerConfig) (*mem.Server, *mem.Broker, *mem.Clock) {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = mem.NewClock(t0)
	}
	srv, err := mem.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := srv.Connect(mem.BrokerConfig{Instance: "test-1", Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	return srv, b, cfg.Clock
}

// start consumes sub with h until the test ends (or stop is called) and
// fails the test when Consume fails.
func start(t *testing.T, b *mem.Broker, sub broker.Subscription, h broker.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wait := b.Start(ctx, sub, h)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := wait(); err != nil {
				t.Errorf("Consume(%s/%s) = %v", sub.Topic, sub.Group, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// idle waits until srv is idle, failing the test after 10 s.
func idle(t *testing.T, srv *mem.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := srv.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

// drain handles everything on srv, failing the test after 10 s.
func drain(t *testing.T, srv *mem.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := srv.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// call is one handler call.
type call struct {
	id, key     string
	attempt     int
	at          time.Time // on the clock
	redelivered bool
	err         error
}

// calls records handler calls.
type calls struct {
	mu    sync.Mutex
	clock *mem.Clock
	list  []call
}

// handler records each call and returns what decide says.
func (c *calls) handler(decide func(d *broker.Delivery) error) broker.Handler {
	return func(_ context.Context, d *broker.Delivery) error {
		var err error
		if decide != nil {
			err = decide(d)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.list = append(c.list, call{id: d.ID, key: string(d.Key), attempt: d.Attempt, at: c.clock.Now(), redelivered: d.Redelivered, err: err})
		return err
	}
}

func (c *calls) snapshot() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.list...)
}

// handled counts, per message id, the calls that returned nil.
func (c *calls) handled() map[string]int {
	out := map[string]int{}
	for _, k := range c.snapshot() {
		if k.err == nil {
			out[k.id]++
		}
	}
	return out
}

// errBoom is the tests' handler failure.
type errBoom struct{ msg string }

func (e *errBoom) Error() string      { return e.msg }
func (e *errBoom) ErrorClass() string { return "test.Boom" }

func boom(format string, a ...any) error { return &errBoom{msg: fmt.Sprintf(format, a...)} }

// sub is a subscription of topic for group with p.
func sub(topic, group string, p retrypolicy.Policy) broker.Subscription {
	return broker.Subscription{Topic: topic, Group: group, Policy: p, Concurrency: 4, ShutdownTimeout: 5 * time.Second}
}

// backoff is a schedule of delays.
func backoff(ds ...time.Duration) retrypolicy.Schedule { return retrypolicy.Schedule{Delays: ds} }

// messages returns n messages with ids and keys prefix-0000 ...
func messages(prefix string, n int) []broker.Message {
	out := make([]broker.Message, n)
	for i := range out {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		out[i] = broker.Message{ID: id, Key: []byte(id), Value: []byte(id), Headers: map[string]string{"tenant": "acme"}}
	}
	return out
}

func publish(t *testing.T, b broker.Broker, topic string, msgs ...broker.Message) {
	t.Helper()
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits, without polling, until cond holds after a change of
// srv, failing the test after 10 s.
func waitFor(t *testing.T, srv *mem.Server, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		changed := srv.Changed()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
