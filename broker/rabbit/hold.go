package rabbit

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

// PauseConsume makes this process's consumers of topic/group stop taking
// deliveries until ResumeConsume: each cancels its consumer
// (basic.cancel) and hands back, requeued, what was prefetched and not yet
// given to a handler; deliveries handlers hold stay theirs. Consume keeps
// running (its channel stays open) and consumes again on ResumeConsume.
// The worker runtime calls it while an operator paused the worker or its
// kill switch is open.
func (b *Broker) PauseConsume(topic, group string) { b.holds.Of(topic, group).Set(true) }

// ResumeConsume undoes PauseConsume.
func (b *Broker) ResumeConsume(topic, group string) { b.holds.Of(topic, group).Set(false) }

// cancelAndReturn cancels the consumer tag on ch and requeues every
// delivery still buffered in deliveries, until the library closes it
// (the broker confirmed the cancel, or the channel closed).
func cancelAndReturn(ch *amqp.Channel, tag string, deliveries <-chan amqp.Delivery) (returned int) {
	_ = ch.Cancel(tag, false)
	for m := range deliveries {
		_ = m.Nack(false, true)
		returned++
	}
	return returned
}
