package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testenv"
)

// TestReserveConsumer: while failed deliveries wait for their copies'
// confirms, the session consumes the queue a second time with a quarter of
// the prefetch, and no more: with the dead letters refused the handler gets
// Prefetch + Prefetch/4 deliveries, from two consumers. A pause cancels
// both and the reserve is gone once nothing waits; every message is dead-
// lettered exactly once.
func TestReserveConsumer(t *testing.T) {
	const prefetch, n = 8, 30
	const reserve = prefetch / 4
	const refusal = "rabbit: forwarding failed; retrying"
	for _, queueType := range []string{rabbit.Classic, rabbit.Quorum} {
		t.Run(queueType, func(t *testing.T) {
			s := sub("reserve." + broker.NewMessageID()[:6])
			s.Concurrency, s.Prefetch = 1, prefetch // MaxRetries 0: the first failure dead-letters
			var logs testenv.Logs
			b := newBroker(t, func(c *rabbit.Config) { c.QueueType, c.Logger = queueType, logs.Logger() }, s)
			if err := b.Declare(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			queue, ch := rabbit.Queue(s.Topic, s.Group), channel(t)
			consumers := func() int {
				q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
				if err != nil {
					t.Fatalf("inspect %s: %v", queue, err)
				}
				return q.Consumers
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			var calls atomic.Int64
			go func() {
				done <- b.Consume(ctx, s, func(context.Context, *broker.Delivery) error {
					calls.Add(1)
					return errors.New("fails")
				})
			}()
			eventually(t, "the consumer", func() bool { return consumers() == 1 })
			bind := refuseDeadLetters(t, ch, b.Plan(s), rabbit.DLQ(queue))
			for i := range n {
				if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: fmt.Sprintf("m%02d", i), Value: []byte("v")}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "the reserve consumer", func() bool { return consumers() == 2 })
			eventually(t, fmt.Sprintf("%d deliveries handled", prefetch+reserve), func() bool {
				return calls.Load() >= prefetch+reserve
			})
			// Each waiting copy refused three times over: time enough for
			// a delivery past the bound to arrive.
			eventually(t, "refused copies", func() bool {
				return logs.Count(slog.LevelWarn, refusal) >= 3*(prefetch+reserve)
			})
			took, err := ch.QueueDeclarePassive(bind.Name, true, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := calls.Load(); got != int64(prefetch+reserve+took.Messages) {
				t.Fatalf("handled %d while the copies are refused (%d taken), want %d + %d + %d (%s)",
					got, took.Messages, prefetch, reserve, took.Messages, queueType)
			}

			b.PauseConsume(s.Topic, s.Group)
			sink := takeDeadLetters(t, ch, bind)
			got := getN(t, ch, sink, prefetch+reserve)
			// A quorum queue counts a cancelled consumer until its
			// deliveries are settled: checked once the copies are taken.
			eventually(t, "no consumer while paused", func() bool { return consumers() == 0 })
			b.ResumeConsume(s.Topic, s.Group)
			got = append(got, getN(t, ch, sink, n-prefetch-reserve-took.Messages)...)
			if took.Messages > 0 {
				got = append(got, getN(t, ch, bind.Name, took.Messages)...)
			}
			eventually(t, "the reserve cancelled", func() bool { return consumers() == 1 })
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Consume: %v", err)
			}
			ids := map[string]int{}
			for _, m := range got {
				ids[m.MessageId]++
			}
			if len(ids) != n || calls.Load() != n {
				t.Fatalf("%d distinct dead letters, handler called %d times, want %d each", len(ids), calls.Load(), n)
			}
			if d := depth(t, ch, queue); d != 0 {
				t.Fatalf("group queue after the run: %d messages, want 0", d)
			}
		})
	}
}
