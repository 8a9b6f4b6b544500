package rabbit

import (
	"context"
	"maps"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// requeue hands m back to the group queue (broker.Requeue): a copy with
// m's own headers, so the same attempt number, straight through the retry
// exchange; m is acked once the copy is confirmed. A copy, not a
// nack-requeue, so that a quorum queue's delivery count (max_claims, the
// delivery limit) does not grow with every hand-back.
func (c *consumer) requeue(ctx context.Context, m amqp.Delivery, fwd chan<- forwardJob, then func()) {
	h := maps.Clone(m.Headers)
	maps.DeleteFunc(h, func(k string, _ any) bool { return brokerOwned(k) || k == HeaderTierPasses })
	if _, ok := h[broker.HeaderTopic]; !ok {
		h[broker.HeaderTopic] = c.sub.Topic
	}
	c.send(ctx, fwd, forwardJob{m: m, out: c.delayed(m, h, 0, 0), then: then})
}
