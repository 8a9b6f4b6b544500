package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestRefusedDeadLetters: while the dead-letter queue refuses copies (a
// nack: full with reject-publish), a failed delivery stays unacked, its
// forwarder trying again, and holds its prefetch slot: the handler gets
// Prefetch deliveries and no more, on classic and quorum queues alike.
// Once the dead letters are taken again every message is in them exactly
// once: nothing lost, nothing doubled.
func TestRefusedDeadLetters(t *testing.T) {
	const prefetch, n = 3, 20
	const refusal = "rabbit: forwarding failed; retrying"
	for _, queueType := range []string{rabbit.Classic, rabbit.Quorum} {
		t.Run(queueType, func(t *testing.T) {
			s := sub("refused." + broker.NewMessageID()[:6])
			s.Concurrency, s.Prefetch = 1, prefetch // MaxRetries 0: the first failure dead-letters
			var logs testenv.Logs
			b := newBroker(t, func(c *rabbit.Config) { c.QueueType, c.Logger = queueType, logs.Logger() }, s)
			if err := b.Declare(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			queue, ch := rabbit.Queue(s.Topic, s.Group), channel(t)
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
			// The session declares its topology first: the dead-letter
			// queue is replaced once it consumes.
			eventually(t, "the consumer", func() bool {
				q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
				return err == nil && q.Consumers == 1
			})
			bind := refuseDeadLetters(t, ch, b.Plan(s), rabbit.DLQ(queue))
			for i := range n {
				if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: fmt.Sprintf("m%02d", i), Value: []byte("v")}); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, fmt.Sprintf("%d deliveries handled", prefetch), func() bool { return calls.Load() >= int64(prefetch) })
			// Each waiting copy refused three times over: time enough for
			// a delivery past the bound to arrive.
			eventually(t, "refused copies", func() bool { return logs.Count(slog.LevelWarn, refusal) >= 3*prefetch })
			// A quorum queue may take one message past its length: that
			// one's delivery is acked and frees its place.
			took, err := ch.QueueDeclarePassive(bind.Name, true, false, false, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := calls.Load(); got != int64(prefetch+took.Messages) {
				t.Fatalf("handled %d while the copies are refused (%d taken), want %d + %d (%s)",
					got, took.Messages, prefetch, took.Messages, queueType)
			}

			got := getN(t, ch, takeDeadLetters(t, ch, bind), n-took.Messages)
			if took.Messages > 0 {
				got = append(got, getN(t, ch, bind.Name, took.Messages)...)
			}
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
			if q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil || q.Messages != 0 {
				t.Fatalf("group queue after the run: %d messages (%v), want 0", q.Messages, err)
			}
		})
	}
}

// refuseDeadLetters replaces dlq, declared as plan has it, with one of
// length 0 that refuses what it is sent (reject-publish: a nack), and
// returns dlq's binding.
func refuseDeadLetters(t *testing.T, ch *amqp.Channel, plan []rabbit.Declaration, dlq string) rabbit.Declaration {
	t.Helper()
	var args amqp.Table
	var bind rabbit.Declaration
	for _, d := range plan {
		switch {
		case d.Kind == "queue" && d.Name == dlq:
			args = maps.Clone(d.Args)
		case d.Kind == "binding" && d.Name == dlq:
			bind = d
		}
	}
	if bind.Exchange == "" {
		t.Fatalf("the plan has no binding of %s", dlq)
	}
	if args == nil {
		args = amqp.Table{}
	}
	args["x-max-length"], args["x-overflow"] = int32(0), "reject-publish"
	if _, err := ch.QueueDelete(dlq, false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(dlq, true, false, false, false, args); err != nil {
		t.Fatalf("declare %s refusing: %v", dlq, err)
	}
	if err := ch.QueueBind(dlq, bind.Key, bind.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	return bind
}

// takeDeadLetters binds a queue of its own as bind binds the refusing
// dead-letter queue, then unbinds that one: the dead letters go to the
// new queue, none elsewhere in between (the exchange's alternate would
// park them). It returns the new queue's name.
func takeDeadLetters(t *testing.T, ch *amqp.Channel, bind rabbit.Declaration) string {
	t.Helper()
	sink := bind.Name + ".taken"
	if _, err := ch.QueueDeclare(sink, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = testenv.AMQP(t).QueueDelete(sink, false, false, false) })
	if err := ch.QueueBind(sink, bind.Key, bind.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueUnbind(bind.Name, bind.Key, bind.Exchange, nil); err != nil {
		t.Fatal(err)
	}
	return sink
}
