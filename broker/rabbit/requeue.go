package rabbit

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
)

// requeue hands m back to the group queue (broker.Requeue): a copy with
// m's own headers, so the same attempt number, straight through the retry
// exchange; m is acked once the copy is confirmed. A copy, not a
// nack-requeue, so that a quorum queue's delivery count (max_claims, the
// delivery limit) does not grow with every hand-back.
func (c *consumer) requeue(ctx context.Context, m amqp.Delivery, fwd chan<- forwardJob, then func()) {
	h := copyTable(m.Headers, func(k string) bool { return brokerOwned(k) || k == HeaderTierPasses })
	if _, ok := h[driver.HeaderTopic]; !ok {
		h[driver.HeaderTopic] = c.sub.Topic
	}
	c.send(ctx, fwd, forwardJob{m: m, out: c.delayed(m, h, 0, 0), then: then})
}

// copyTable returns the headers of a copy of a delivery: t without the
// names drop reports. It is never nil, whatever t is: a message published
// without headers (any other client may send one) arrives with a nil
// table, and a copy's headers are written to.
func copyTable(t amqp.Table, drop func(string) bool) amqp.Table {
	out := make(amqp.Table, len(t)+2) // room for what a copy adds
	for k, v := range t {
		if !drop(k) {
			out[k] = v
		}
	}
	return out
}

// handBack returns to its group queue a delivery no handler took, when a
// pause or shutdown hands back what was prefetched. On a quorum queue it
// is a copy (requeue), acked once confirmed: a nack would count against
// the queue's delivery limit (RabbitMQ before 4.3 counts every return), so
// that pausing a worker often enough would dead-letter messages no handler
// ever saw. The copy goes to the back of the queue. A classic queue has no
// delivery limit: there the delivery is nacked and keeps its place.
func (c *consumer) handBack(ctx context.Context, fwd chan<- forwardJob) func(amqp.Delivery) {
	if c.b.cfg.QueueType != Quorum {
		return nackRequeue
	}
	return func(m amqp.Delivery) {
		if remainingDelay(m.Headers) > 0 {
			nackRequeue(m) // still waiting: a copy would lose what is left (requeue is for handled messages)
			return
		}
		c.requeue(ctx, m, fwd, nil)
	}
}
