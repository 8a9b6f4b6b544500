package rabbit_test

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
)

// A quorum group queue's delivery limit is rabbitmq.delivery_limit when
// the worker sets no max_claims (RabbitMQ 4 would apply 20, 3.x none):
// messages a foreign consumer keeps handing back are dead-lettered by the
// broker after limit+1 deliveries, each once, into the group's DLQ, and
// read with their own reason delivery_limit. Counted: every message
// published is dead-lettered, none twice, none lost.
func TestQuorumDeliveryLimitDeadLetters(t *testing.T) {
	const limit, n = 3, 5
	s := sub("dlimit.cfg." + broker.NewMessageID()[:6])
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType, c.DeliveryLimit = rabbit.Quorum, limit }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	q := rabbit.Queue(s.Topic, s.Group)
	// A foreign producer: no headers, no message id property.
	ch := channel(t)
	for i := range n {
		publishConfirmed(t, ch, b.Names().Topics(), s.Topic, amqp.Publishing{Body: fmt.Appendf(nil, "m%d", i)})
	}
	msgs, err := channel(t).Consume(q, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := channel(t).Consume(rabbit.DLQ(q), "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliveries := map[string]int{}
	deadLettered := map[string]int{}
	deadline := time.After(20 * time.Second)
	for len(deadLettered) < n {
		select {
		case m := <-msgs:
			deliveries[string(m.Body)]++
			_ = m.Nack(false, true)
		case d := <-dead:
			_ = d.Ack(false)
			e := rabbit.EntryFromDelivery(d)
			deadLettered[string(d.Body)]++
			if e.Reason != string(driver.ReasonDeliveryLimit) || e.Source != q {
				t.Errorf("dead letter %q: reason %q source %q, want %s / %s", d.Body, e.Reason, e.Source, driver.ReasonDeliveryLimit, q)
			}
		case <-deadline:
			t.Fatalf("after 20 s: dead-lettered %v of %d, deliveries %v", deadLettered, n, deliveries)
		}
	}
	for i := range n {
		body := fmt.Sprintf("m%d", i)
		if deadLettered[body] != 1 || deliveries[body] != limit+1 {
			t.Errorf("%s: dead-lettered %d times after %d deliveries, want once after limit+1 = %d", body, deadLettered[body], deliveries[body], limit+1)
		}
	}
	if got := depth(t, channel(t), q); got != 0 {
		t.Errorf("group queue still holds %d", got)
	}
}

// A quorum DLQ has no delivery limit (x-delivery-limit -1 on RabbitMQ 4,
// none on 3.x): a dead letter the keeper hands back more often than
// RabbitMQ 4's default limit of 20 (a store that keeps failing) stays in
// the DLQ; with the broker's default it would be dropped, since a DLQ
// dead-letters nowhere.
func TestQuorumDLQHasNoDeliveryLimit(t *testing.T) {
	const returns = 25
	s := sub("dlimit.dlq." + broker.NewMessageID()[:6])
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType = rabbit.Quorum }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	dlq := rabbit.DLQ(rabbit.Queue(s.Topic, s.Group))
	publishConfirmed(t, channel(t), "", dlq, amqp.Publishing{Body: []byte("dead")})
	msgs, err := channel(t).Consume(dlq, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range returns + 1 {
		select {
		case m := <-msgs:
			if i == returns {
				_ = m.Ack(false)
				return
			}
			_ = m.Nack(false, true)
		case <-time.After(10 * time.Second):
			t.Fatalf("the dead letter is gone after %d returns (a delivery limit dropped it)", i)
		}
	}
}

// publishConfirmed publishes p as a raw amqp091 client would, mandatory,
// and waits for the broker's confirm.
func publishConfirmed(t *testing.T, ch *amqp.Channel, exchange, key string, p amqp.Publishing) {
	t.Helper()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	conf, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), exchange, key, true, false, p)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := conf.WaitContext(t.Context()); !ok || err != nil {
		t.Fatalf("publish to %q key %q: acked %v, %v", exchange, key, ok, err)
	}
}
