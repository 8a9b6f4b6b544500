package rabbit

import (
	"context"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// waitFor waits for wg, or until deadline fires; it reports whether wg
// finished.
func waitFor(wg *sync.WaitGroup, deadline <-chan time.Time) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-deadline:
		return false
	}
}

// forwardJob is a copy to publish for a delivery, and what to do once it
// is confirmed and the delivery acked.
type forwardJob struct {
	m    amqp.Delivery
	out  outgoing
	then func()
}

// send hands a copy to the session's forwarders. When the session is
// shutting down past its timeout the delivery is requeued instead.
func (c *consumer) send(ctx context.Context, fwd chan<- forwardJob, j forwardJob) {
	select {
	case fwd <- j:
	case <-ctx.Done():
		_ = j.m.Nack(false, true)
	}
}

// forward publishes out and acks m once it is confirmed, and reports
// whether it did. While the publish fails it retries with back-off; when the
// consumer shuts down first, m is requeued, never dropped.
func (c *consumer) forward(ctx context.Context, m amqp.Delivery, out outgoing) bool {
	wait := 50 * time.Millisecond
	for {
		err := c.b.pub.publish(ctx, out)
		if err == nil {
			if aerr := m.Ack(false); aerr != nil {
				c.log.Warn("rabbit: ack after forward failed; the message will be redelivered (duplicate)",
					"message_id", m.MessageId, "error", aerr)
			}
			return true
		}
		c.log.Warn("rabbit: forwarding failed; retrying", "message_id", m.MessageId, "to", out.exchange, "error", err)
		select {
		case <-ctx.Done():
			_ = m.Nack(false, true)
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
