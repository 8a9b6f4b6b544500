package rabbit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/retrypolicy"
)

// The route holds a delayed message for its delay, not for the delay
// rounded up to whole resolutions: its first queue's expiration takes the
// rounding back. At 1 s resolution a 100 ms delay (one resolution, once
// rounded up) arrives well before a second and never before 100 ms, and
// without an expiration property (RabbitMQ removes it when it
// dead-letters the message), through classic and quorum delay queues; so
// does a retry copy's 100 ms back-off.
func TestRouteTakesBackTheRounding(t *testing.T) {
	const delay = 100 * time.Millisecond
	for _, qt := range []string{rabbit.Classic, rabbit.Quorum} {
		t.Run(qt, func(t *testing.T) {
			topic := "routeexp." + broker.NewMessageID()[:6]
			s := sub(topic)
			s.Policy = retrypolicy.Policy{MaxRetries: 1, Backoff: retrypolicy.Schedule{Delays: []time.Duration{delay}}}
			b := newBroker(t, func(c *rabbit.Config) {
				c.Delay = rabbit.DelayConfig{Mode: rabbit.DelayRoute, Resolution: time.Second, Factor: 2, Levels: 2}
				c.DelayQueueType = qt
			}, s)
			ctx := t.Context()
			if err := b.Declare(ctx, s); err != nil {
				t.Fatal(err)
			}
			check := func(what string, waited time.Duration) {
				t.Helper()
				if waited < delay {
					t.Errorf("%s: arrived after %s, %s early", what, waited, delay-waited)
				}
				if waited >= 900*time.Millisecond {
					t.Errorf("%s: arrived after %s: held for the delay rounded up to the 1 s resolution", what, waited)
				}
			}

			// PublishDelayed, read by a plain AMQP consumer of the group
			// queue, as a foreign application would.
			ch := channel(t)
			start := time.Now()
			if err := b.PublishDelayed(ctx, topic, delay, broker.Message{ID: "published", Value: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			m := get(t, ch, rabbit.Queue(topic, s.Group))
			check("PublishDelayed", time.Since(start))
			if m.Expiration != "" {
				t.Errorf("PublishDelayed: delivered with expiration %q, want none", m.Expiration)
			}
			// A message the consumer below fails once: its retry copy.
			if err := b.Publish(ctx, topic, broker.Message{ID: "retried", Value: []byte("x")}); err != nil {
				t.Fatal(err)
			}

			calls := make(chan time.Time, 2)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- b.Consume(cctx, s, func(_ context.Context, d *broker.Delivery) error {
					calls <- time.Now()
					if d.Attempt == 1 {
						return errors.New("once")
					}
					return nil
				})
			}()
			var at [2]time.Time
			for i := range at {
				select {
				case at[i] = <-calls:
				case <-time.After(10 * time.Second):
					t.Fatalf("%d handler calls, want 2", i)
				}
			}
			check("retry copy", at[1].Sub(at[0]))
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
