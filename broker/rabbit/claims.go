package rabbit

import (
	"context"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// headerDeliveryCount is set by RabbitMQ on redeliveries from a quorum
// queue: the number of earlier deliveries.
const headerDeliveryCount = "x-delivery-count"

// claimed is the claim of one delivery: its counter key (empty when no
// counter is used), the count and whether it is over the limit.
type claimed struct {
	key  string
	n    int64
	over bool
}

// claim counts this delivery of m for poison-pill protection: in the
// subscription's claim counter when it has one, keyed by group, message id
// and attempt (it counts handler starts exactly); else, on quorum queues,
// with the broker's x-delivery-count. That one counts deliveries: when a
// process dies, the messages prefetched beyond its running handlers are
// counted too, so with Prefetch above Concurrency a message queued behind a
// poison pill can reach the limit without its handler having run.
func (c *consumer) claim(ctx context.Context, m amqp.Delivery, d *broker.Delivery) claimed {
	if c.sub.MaxClaims <= 0 {
		return claimed{}
	}
	if c.sub.Claims != nil && m.MessageId != "" {
		key := broker.ClaimKey(c.sub.Group, m.MessageId, strconv.Itoa(d.Attempt))
		n, over := c.sub.Claim(ctx, key)
		return claimed{key: key, n: n, over: over}
	}
	if c.b.cfg.QueueType == Quorum {
		n := int64(intHeader(m.Headers, headerDeliveryCount)) + 1
		return claimed{n: n, over: n > int64(c.sub.MaxClaims)}
	}
	return claimed{}
}

// release forgets the claim of a message that is done.
func (c *consumer) release(ctx context.Context, cl claimed) {
	if cl.key != "" {
		c.sub.Release(ctx, cl.key)
	}
}
