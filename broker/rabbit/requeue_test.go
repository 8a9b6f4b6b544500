package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/retrypolicy"
)

// TestRequeueKeepsTheAttempt: a message handed back with broker.Requeue
// more times than the policy allows retries comes back with the same
// attempt number each time and is never dead-lettered, on classic and
// quorum queues (whose delivery count a hand-back does not raise); a later
// plain failure still spends attempt 1.
func TestRequeueKeepsTheAttempt(t *testing.T) {
	for _, qt := range []string{rabbit.Classic, rabbit.Quorum} {
		t.Run(qt, func(t *testing.T) {
			s := sub("requeue." + broker.NewMessageID()[:6])
			s.Policy = retrypolicy.Policy{MaxRetries: 1, Backoff: retrypolicy.Schedule{Delays: []time.Duration{100 * time.Millisecond}}}
			s.MaxClaims = 3 // quorum: a delivery limit below the hand-backs
			b := newBroker(t, func(c *rabbit.Config) { c.QueueType = qt }, s)
			if err := b.Declare(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			const handBacks = 5
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			attempts := make(chan int, 20)
			n := 0
			go func() {
				done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error {
					attempts <- d.Attempt
					n++
					switch {
					case n <= handBacks:
						return broker.Requeue(errors.New("downstream down"))
					case n == handBacks+1:
						return errors.New("one real failure")
					}
					return nil
				})
			}()
			if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: "r1", Value: []byte("v")}); err != nil {
				t.Fatal(err)
			}
			var got []int
			timeout := time.After(20 * time.Second)
			for len(got) < handBacks+2 {
				select {
				case a := <-attempts:
					got = append(got, a)
				case <-timeout:
					t.Fatalf("attempts so far %v: the message did not come back", got)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Consume: %v", err)
			}
			if want := "[1 1 1 1 1 1 2]"; fmt.Sprint(got) != want || len(attempts) != 0 {
				t.Fatalf("attempts %v (and %d more), want %s", got, len(attempts), want)
			}
			if n := depth(t, channel(t), rabbit.DLQ(rabbit.Queue(s.Topic, s.Group))); n != 0 {
				t.Fatalf("%d dead letters, want none", n)
			}
		})
	}
}
