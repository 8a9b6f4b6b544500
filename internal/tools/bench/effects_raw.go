package bench

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/exactlyonce"
)

// The raw clients of the effects scenario (effectsSide): publishing
// messages they make (the relay's issue-43 baseline) and messages read
// from PostgreSQL (relayByHand).

// rawPublish times the raw client publishing n messages to a raw queue
// of its own (effectsSide): pipelined deferred confirms, awaited every
// batch, persistent, mandatory, with a message id.
func (e *rabbitEnv) rawPublish(ctx context.Context, name string, n, batch int) (Row, error) {
	exchange, queue, err := e.rawQueue(name, name)
	if err != nil {
		return Row{}, err
	}
	m := startMeter()
	if err := e.rawFillBatches(ctx, exchange, name, n, batch); err != nil {
		return Row{}, err
	}
	el, u := m.stop()
	return row(ScenarioEffects, RabbitMQ, ClientRaw, n, el, u), e.purge(queue)
}

// rawPublish times the raw producer writing n records with redrive's id
// header to a raw topic of its own, batch records per ProduceSync
// (effectsSide).
func (e *kafkaEnv) rawPublish(ctx context.Context, name string, n, batch int) (Row, error) {
	topic, err := e.rawTopic(ctx, name)
	if err != nil {
		return Row{}, err
	}
	r, err := e.publishRaw(ctx, topic, n, messages(n, batch, body(e.cfg.Size)), recordsWithID)
	r.Scenario = ScenarioEffects
	return r, err
}

// rawSender publishes batches of messages with a broker's raw client to a
// topic or queue of its own, confirms awaited, each with its message id
// as redrive writes it; close releases what it holds.
type rawSender struct {
	send  func(ctx context.Context, msgs []broker.Message) error
	close func() error
}

// rawSender returns the raw producer writing to a raw topic of its own
// (effectsSide).
func (e *kafkaEnv) rawSender(ctx context.Context, name string) (rawSender, error) {
	topic, err := e.rawTopic(ctx, name)
	if err != nil {
		return rawSender{}, err
	}
	return rawSender{send: func(ctx context.Context, msgs []broker.Message) error {
		recs := make([]*kgo.Record, len(msgs))
		for i, m := range msgs {
			recs[i] = &kgo.Record{Topic: topic, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp,
				Headers: []kgo.RecordHeader{{Key: driver.HeaderMessageID, Value: []byte(m.ID)}}}
		}
		return e.produce(ctx, recs)
	}, close: func() error { return nil }}, nil
}

// rawSender returns a raw amqp091 channel in confirm mode publishing to a
// raw queue of its own (effectsSide), as rawPublish does.
func (e *rabbitEnv) rawSender(_ context.Context, name string) (rawSender, error) {
	exchange, queue, err := e.rawQueue(name, name)
	if err != nil {
		return rawSender{}, err
	}
	conn, ch, err := e.dial()
	if err != nil {
		return rawSender{}, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = conn.Close()
		return rawSender{}, fmt.Errorf("raw: confirm mode: %w", err)
	}
	confs := make([]*amqp.DeferredConfirmation, 0, exactlyonce.DefaultRelayBatch)
	return rawSender{send: func(ctx context.Context, msgs []broker.Message) error {
		confs = confs[:0]
		for _, m := range msgs {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, name, true, false, amqp.Publishing{
				DeliveryMode: amqp.Persistent, MessageId: m.ID, Timestamp: m.Timestamp, Body: m.Value})
			if err != nil {
				return fmt.Errorf("raw: publish: %w", err)
			}
			confs = append(confs, dc)
		}
		for _, dc := range confs {
			ok, err := dc.WaitContext(ctx)
			if err == nil && !ok {
				err = fmt.Errorf("nacked")
			}
			if err != nil {
				return fmt.Errorf("raw: confirm: %w", err)
			}
		}
		return nil
	}, close: func() error {
		_ = conn.Close()
		return e.purge(queue)
	}}, nil
}
