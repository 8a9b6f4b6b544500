// Package rabbitfixture gives the dead-letter packages' tests a RabbitMQ
// worker queue of their own: a broker with a prefix of its own, one
// declared subscription, its DLQ's name and a plain AMQP channel to read
// or fill its queues, all deleted when the test ends. It is test support;
// RabbitMQ is required (unreachable fails the test).
package rabbitfixture

import (
	"context"
	"log/slog"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Fixture is one declared worker queue on the RabbitMQ of testenv.
type Fixture struct {
	// Broker is the backend, with a prefix of its own.
	Broker *rabbit.Broker
	// Sub is the declared subscription (topic "dlqtest.<id>", group
	// "billing").
	Sub broker.Subscription
	// Queue and DLQ are the group queue's and its dead-letter queue's
	// names.
	Queue, DLQ string
	// Ch is a plain amqp091-go channel, as another client's.
	Ch *amqp.Channel
}

// New declares a fresh worker queue for t and deletes everything it
// declared when t ends.
func New(t testing.TB) *Fixture {
	t.Helper()
	ctx := context.Background()
	id := broker.NewMessageID()[:8]
	b, err := rabbit.New(ctx, rabbit.Config{URL: testenv.RabbitMQ.URL(), Prefix: "dt-" + id, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	f := &Fixture{Broker: b, Sub: broker.Subscription{Topic: "dlqtest." + id, Group: "billing"}}
	f.Queue = rabbit.Queue(f.Sub.Topic, f.Sub.Group)
	f.DLQ = rabbit.DLQ(f.Queue)
	t.Cleanup(func() {
		_ = b.Close()
		testenv.DeleteTopology(b.Plan(f.Sub), func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
	})
	if err := b.Declare(ctx, f.Sub); err != nil {
		t.Fatalf("Declare: %v", err)
	}
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if f.Ch, err = conn.Channel(); err != nil {
		t.Fatalf("channel: %v", err)
	}
	return f
}

// Depth is the number of messages ready in the group queue.
func (f *Fixture) Depth(t testing.TB) int {
	t.Helper()
	q, err := f.Ch.QueueDeclarePassive(f.Queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", f.Queue, err)
	}
	return q.Messages
}
