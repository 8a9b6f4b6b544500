package rabbit

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// PauseConsume makes this process's consumers of topic/group stop taking
// deliveries until ResumeConsume: each cancels its consumer
// (basic.cancel) and hands back what was prefetched and not yet given to
// a handler (requeued on a classic queue; on a quorum queue a copy, which
// spends nothing of its delivery limit); deliveries handlers hold stay
// theirs. Consume keeps running (its channel stays open) and consumes
// again on ResumeConsume.
// The worker runtime calls it while an operator paused the worker or its
// kill switch is open.
func (b *Broker) PauseConsume(topic, group string) { b.holds.Of(topic, group).Set(true) }

// ResumeConsume undoes PauseConsume.
func (b *Broker) ResumeConsume(topic, group string) { b.holds.Of(topic, group).Set(false) }

// cancelAndReturn cancels the consumer tag on ch and hands back every
// delivery still buffered in deliveries (giveBack), until the library
// closes it (the broker confirmed the cancel, or the channel closed).
func cancelAndReturn(ch *amqp.Channel, tag string, deliveries <-chan amqp.Delivery, giveBack func(amqp.Delivery)) (returned int) {
	_ = ch.Cancel(tag, false)
	for m := range deliveries {
		giveBack(m)
		returned++
	}
	return returned
}

// nackRequeue hands m back to its queue with basic.nack: it keeps its
// place, and on a quorum queue its delivery count grows.
func nackRequeue(m amqp.Delivery) { _ = m.Nack(false, true) }

// subscriber is a session's consumer on its channel, which a hold
// (PauseConsume) cancels and starts again.
type subscriber struct {
	c          *consumer
	ch         *amqp.Channel
	tag        string
	deliveries <-chan amqp.Delivery // nil while cancelled: never ready
	// giveBack hands back a delivery no handler took (a pause, shutdown):
	// nackRequeue, or on a quorum queue a copy (consumer.handBack).
	giveBack func(amqp.Delivery)
}

// follow consumes when held is false and cancels when it is true; a
// cancel requeues what was prefetched (taken, deliveries already taken
// off the stream and requeued by the caller, are counted in the log).
func (s *subscriber) follow(held bool, taken int) error {
	switch {
	case held && s.deliveries != nil:
		n := cancelAndReturn(s.ch, s.tag, s.deliveries, s.giveBack)
		s.deliveries = nil
		s.c.log.Info("rabbit: consumer paused; prefetched deliveries returned to the queue", "returned", n+taken)
	case !held && s.deliveries == nil:
		resumed := s.tag != ""
		s.tag = fmt.Sprintf("redrive-%s-%s", s.c.sub.Group, broker.NewMessageID()[:8])
		d, err := s.ch.Consume(s.c.queue, s.tag, false, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("rabbit: consume %q: %w", s.c.queue, err)
		}
		s.deliveries = d
		if resumed {
			s.c.log.Info("rabbit: consumer resumed")
		}
	}
	return nil
}
