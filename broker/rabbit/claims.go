package rabbit

import (
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// headerDeliveryCount is set by RabbitMQ on redeliveries from a quorum
// queue: the number of earlier deliveries.
const headerDeliveryCount = "x-delivery-count"

// claim says how this delivery of m is counted for poison-pill
// protection: in the subscription's claim counter when it has one, keyed by
// group, message id and attempt (it counts handler starts exactly); else,
// on quorum queues, with the broker's x-delivery-count. That one counts
// deliveries: when a process dies, the messages prefetched beyond its
// running handlers are counted too, so with Prefetch above Concurrency a
// message queued behind a poison pill can reach the limit without its
// handler having run.
func (c *consumer) claim(m amqp.Delivery, d *broker.Delivery) driver.Input {
	var in driver.Input
	switch {
	case c.sub.MaxClaims <= 0:
	case c.pipe.Counts() && m.MessageId != "":
		in.ClaimKey = driver.ClaimKey(c.sub.Group, m.MessageId, strconv.Itoa(d.Attempt))
	case c.b.cfg.QueueType == Quorum:
		in.NativeClaims = int64(intHeader(m.Headers, headerDeliveryCount)) + 1
	}
	return in
}
