package rabbit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
)

// TestPauseConsumeReturnsPrefetched: PauseConsume cancels the consumer
// and what it prefetched goes back to the queue (only the delivery a
// handler holds stays out); ResumeConsume consumes again and every
// message is handled once.
func TestPauseConsumeReturnsPrefetched(t *testing.T) {
	s := sub("hold." + broker.NewMessageID()[:6])
	s.Concurrency, s.Prefetch = 1, 10
	b := newBroker(t, nil, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	handled, started, release, stop := consumeHolding(t, b, s, "m00")
	const n = 20
	msgs := make([]broker.Message, n)
	for i := range msgs {
		msgs[i] = broker.Message{ID: fmt.Sprintf("m%02d", i), Value: []byte("v")}
	}
	if err := b.Publish(t.Context(), s.Topic, msgs...); err != nil {
		t.Fatal(err)
	}
	<-started // m00 is held by the handler; 9 more are prefetched
	ch := channel(t)
	q := rabbit.Queue(s.Topic, s.Group)
	waitDepth(t, func() int { return depth(t, ch, q) }, n-s.Prefetch, "the prefetch filled")
	b.PauseConsume(s.Topic, s.Group)
	waitDepth(t, func() int { return depth(t, ch, q) }, n-1, "the prefetched messages back in the queue")
	close(release)
	b.ResumeConsume(s.Topic, s.Group)
	handledOnce(t, handled, n, func() string { return "after the resume" })
	if err := stop(); err != nil {
		t.Fatalf("Consume: %v", err)
	}
}

// consumeHolding runs Consume on s until the returned stop is called
// (stop returns Consume's error); the handler sends every delivery's id
// on handled, and holds the one with id hold until release is closed,
// saying so on started.
func consumeHolding(t *testing.T, b *rabbit.Broker, s broker.Subscription, hold string) (handled chan string, started, release chan struct{}, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	started, release = make(chan struct{}, 1), make(chan struct{})
	handled = make(chan string, 100)
	go func() {
		done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error {
			if d.ID == hold {
				started <- struct{}{}
				<-release
			}
			handled <- d.ID
			return nil
		})
	}()
	return handled, started, release, func() error { cancel(); return <-done }
}

// handledOnce waits until n distinct messages were handled and fails the
// test when one was handled twice.
func handledOnce(t *testing.T, handled <-chan string, n int, what func() string) {
	t.Helper()
	seen := map[string]int{}
	timeout := time.After(20 * time.Second)
	for len(seen) < n {
		select {
		case id := <-handled:
			seen[id]++
		case <-timeout:
			t.Fatalf("%d of %d handled %s", len(seen), n, what())
		}
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s handled %d times", id, c)
		}
	}
}

func waitDepth(t *testing.T, depth func() int, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := depth()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: queue depth %d, want %d", what, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pausing a quorum queue's consumer does not spend its delivery limit:
// the prefetched messages handed back at each pause are copies, not
// nacks (RabbitMQ before 4.3 counts every return). With a limit of 2 and
// five pauses, every message is still handled once, none dead-lettered.
func TestPauseDoesNotSpendDeliveryLimit(t *testing.T) {
	const n, pauses = 10, 5
	s := sub("hold.qq." + broker.NewMessageID()[:6])
	s.Concurrency, s.Prefetch = 1, n
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType, c.DeliveryLimit = rabbit.Quorum, 2 }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	handled, started, release, stop := consumeHolding(t, b, s, "m00")
	msgs := make([]broker.Message, n)
	for i := range msgs {
		msgs[i] = broker.Message{ID: fmt.Sprintf("m%02d", i), Value: []byte("v")}
	}
	if err := b.Publish(t.Context(), s.Topic, msgs[:1]...); err != nil {
		t.Fatal(err)
	}
	<-started // m00 is held by the handler: the others are prefetched behind it
	if err := b.Publish(t.Context(), s.Topic, msgs[1:]...); err != nil {
		t.Fatal(err)
	}
	ch := channel(t)
	q := rabbit.Queue(s.Topic, s.Group)
	for range pauses {
		b.ResumeConsume(s.Topic, s.Group)
		waitDepth(t, func() int { return depth(t, ch, q) }, 0, "the prefetch took them")
		b.PauseConsume(s.Topic, s.Group)
		waitDepth(t, func() int { return depth(t, ch, q) }, n-1, "the prefetched messages back in the queue")
	}
	close(release)
	b.ResumeConsume(s.Topic, s.Group)
	handledOnce(t, handled, n, func() string {
		return fmt.Sprintf("after %d pauses (dead letters: %d)", pauses, depth(t, ch, rabbit.DLQ(q)))
	})
	if err := stop(); err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if dead := depth(t, ch, rabbit.DLQ(q)); dead != 0 {
		t.Errorf("%d messages dead-lettered by the pauses", dead)
	}
}

// Shutting down a quorum queue's consumer does not spend the delivery
// limit either: three consumers in turn each take one message into their
// handler, prefetch the rest and are stopped; what they prefetched goes
// back as copies. With a limit of 1 nothing is dead-lettered, and every
// message is handled once in the end.
func TestShutdownDoesNotSpendDeliveryLimit(t *testing.T) {
	const n, rounds = 8, 3
	s := sub("stop.qq." + broker.NewMessageID()[:6])
	s.Concurrency, s.Prefetch = 1, n
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType, c.DeliveryLimit = rabbit.Quorum, 1 }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	msgs := make([]broker.Message, n)
	for i := range msgs {
		msgs[i] = broker.Message{ID: fmt.Sprintf("m%02d", i), Value: []byte("v")}
	}
	if err := b.Publish(t.Context(), s.Topic, msgs...); err != nil {
		t.Fatal(err)
	}
	ch := channel(t)
	q := rabbit.Queue(s.Topic, s.Group)
	seen := map[string]int{}
	for round := range rounds {
		ctx, cancel := context.WithCancel(t.Context())
		started, release := make(chan string, 1), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error {
				started <- d.ID
				<-release
				return nil
			})
		}()
		seen[<-started]++
		waitDepth(t, func() int { return depth(t, ch, q) }, 0, fmt.Sprintf("round %d: the rest prefetched", round))
		cancel()
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("round %d: Consume: %v", round, err)
		}
		waitDepth(t, func() int { return depth(t, ch, q) }, n-round-1, fmt.Sprintf("round %d: the prefetched messages back", round))
	}
	ctx, cancel := context.WithCancel(t.Context())
	handled := make(chan string, n)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error { handled <- d.ID; return nil })
	}()
	for len(seen) < n {
		select {
		case id := <-handled:
			seen[id]++
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d handled (dead letters: %d)", len(seen), n, depth(t, ch, rabbit.DLQ(q)))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s handled %d times", id, c)
		}
	}
	if dead := depth(t, ch, rabbit.DLQ(q)); dead != 0 {
		t.Errorf("%d messages dead-lettered by the shutdowns", dead)
	}
}
