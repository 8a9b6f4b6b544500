package rabbit

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

// Republish puts a dead letter back on the queue it failed in, and only
// there: through the retry exchange with the source queue as routing key.
// The body, key and application headers are the original ones byte for
// byte; x-redrive-replayed-from names the entry (replayedFrom) and the
// attempt count starts again at 1. It returns once the broker confirmed.
// A source queue that no longer exists parks the message in the
// unroutable queue.
func (b *Broker) Republish(ctx context.Context, e dlq.Entry, replayedFrom string) error {
	if e.Source == "" {
		return errors.New("rabbit: republish: entry has no source queue")
	}
	h := toTable(e.OriginalHeaders)
	h[broker.HeaderReplayedFrom] = replayedFrom
	if e.OriginalTopic != "" {
		h[broker.HeaderTopic] = e.OriginalTopic
	}
	if e.OriginalKey != nil {
		h[broker.HeaderKey] = string(e.OriginalKey)
	}
	id := e.MessageID
	if id == "" {
		id = broker.NewMessageID()
	}
	err := b.pub.publish(ctx, outgoing{exchange: b.names.Retry(), key: e.Source, msg: amqp.Publishing{
		Headers:      h,
		DeliveryMode: amqp.Persistent,
		MessageId:    id,
		Body:         e.OriginalValue,
	}})
	if err != nil {
		return fmt.Errorf("rabbit: republish to queue %q: %w", e.Source, err)
	}
	return nil
}

var _ dlq.ReplayTargeter = (*Broker)(nil)

// ReplayTarget implements dlq.ReplayTargeter: Republish puts e back on the
// queue it failed in, its worker's group queue.
func (b *Broker) ReplayTarget(e dlq.Entry) (target, worker string) { return e.Source, e.Worker }
