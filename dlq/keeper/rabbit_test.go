package keeper_test

import (
	"context"
	"log/slog"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// rabbitFixture is a broker with a prefix of its own, one declared
// subscription, and a plain AMQP channel to read its queue; everything is
// deleted when the test ends. RabbitMQ is required: unreachable fails.
type rabbitFixture struct {
	b     *rabbit.Broker
	sub   broker.Subscription
	queue string
	dlq   string
	ch    *amqp.Channel
}

func newRabbit(t *testing.T) *rabbitFixture {
	t.Helper()
	ctx := context.Background()
	id := broker.NewMessageID()[:8]
	b, err := rabbit.New(ctx, rabbit.Config{URL: testenv.RabbitMQ.URL(), Prefix: "dt-" + id, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	f := &rabbitFixture{b: b, sub: broker.Subscription{Topic: "dlqtest." + id, Group: "billing"}}
	f.queue = rabbit.Queue(f.sub.Topic, f.sub.Group)
	f.dlq = rabbit.DLQ(f.queue)
	t.Cleanup(func() {
		_ = b.Close()
		testenv.DeleteTopology(b.Plan(f.sub), func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
	})
	if err := b.Declare(ctx, f.sub); err != nil {
		t.Fatalf("Declare: %v", err)
	}
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if f.ch, err = conn.Channel(); err != nil {
		t.Fatalf("channel: %v", err)
	}
	return f
}
