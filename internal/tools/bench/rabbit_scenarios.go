package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
)

// publish: redrive Publish in batches vs raw pipelined deferred confirms
// with the same batch size, both mandatory and persistent.
func (e *rabbitEnv) publish(ctx context.Context) ([]Row, error) {
	n, body := e.cfg.Messages, body(e.cfg.Size)
	batches := messages(n, e.cfg.Batch, body)

	// raw
	e.progress(ScenarioPublish, ClientRaw)
	exchange, queue, err := e.rawQueue("publish", "publish")
	if err != nil {
		return nil, err
	}
	conn, ch, err := e.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("raw: confirm mode: %w", err)
	}
	lat := make([]time.Duration, 0, len(batches))
	confs := make([]*amqp.DeferredConfirmation, 0, e.cfg.Batch)
	m := startMeter()
	for _, batch := range batches {
		t0 := time.Now()
		confs = confs[:0]
		for _, msg := range batch {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, "publish", true, false, amqp.Publishing{
				Headers:      amqp.Table{headerSeq: msg.Headers[headerSeq]},
				DeliveryMode: amqp.Persistent,
				MessageId:    broker.NewMessageID(),
				Timestamp:    time.Now(),
				Body:         msg.Value,
			})
			if err != nil {
				return nil, fmt.Errorf("raw: publish: %w", err)
			}
			confs = append(confs, dc)
		}
		for _, dc := range confs {
			ok, err := dc.WaitContext(ctx)
			if err != nil {
				return nil, fmt.Errorf("raw: await confirm: %w", err)
			}
			if !ok {
				return nil, fmt.Errorf("raw: broker refused (nack) a message")
			}
		}
		lat = append(lat, time.Since(t0))
	}
	el, u := m.stop()
	raw := row(ScenarioPublish, RabbitMQ, ClientRaw, n, el, u).withLatencies(lat)
	_ = conn.Close()
	if err := e.purge(queue); err != nil {
		return []Row{raw}, err
	}

	// redrive
	e.progress(ScenarioPublish, ClientRedrive)
	s, err := e.sub(ctx, "publish")
	if err != nil {
		return []Row{raw}, err
	}
	rd, err := e.publishTimed(ctx, ScenarioPublish, s.Topic, n, batches)
	if err != nil {
		return []Row{raw}, err
	}
	compare(&rd, raw, ClientRaw, 0.95)
	if err := e.purge(rabbit.Queue(s.Topic, s.Group)); err != nil {
		return []Row{raw, rd}, err
	}
	return []Row{raw, rd}, nil
}

// fill publishes n sequence-numbered messages to topic through redrive
// (not measured).
func (e *rabbitEnv) fill(ctx context.Context, topic string, n int) error {
	for _, batch := range messages(n, 500, body(e.cfg.Size)) {
		if err := e.b.Publish(ctx, topic, batch...); err != nil {
			return fmt.Errorf("pre-fill %s: %w", topic, err)
		}
	}
	return nil
}

// rabbitConsumeRounds is how many rounds the RabbitMQ consume row splits
// its messages into, the clients in turn: one raw drain followed by one
// redrive drain gave 0.85–1.03 across runs of one day, a broker-bound
// row drifting between two measurements seconds apart.
const rabbitConsumeRounds = 3

// consume: drain a pre-filled queue with a no-op handler and ack, redrive
// Consume vs a raw channel with the same prefetch and as many goroutines
// acking: rabbitConsumeRounds rounds of a share of the messages, each
// client filling and draining its queue in turn; each row is its median
// round, the ratio the median of the rounds' ratios.
func (e *rabbitEnv) consume(ctx context.Context) ([]Row, error) {
	n := (e.cfg.Messages + rabbitConsumeRounds - 1) / rabbitConsumeRounds
	exchange, queue, err := e.rawQueue("consume", "consume")
	if err != nil {
		return nil, err
	}
	s, err := e.sub(ctx, ScenarioConsume)
	if err != nil {
		return nil, err
	}
	var raws, rds []Row
	for range rabbitConsumeRounds {
		e.progress(ScenarioConsume, ClientRaw)
		if err := e.rawFill(ctx, exchange, "consume", n); err != nil {
			return nil, err
		}
		raw, err := e.rawDrain(ctx, ScenarioConsume, queue, n, nil)
		if err != nil {
			return nil, err
		}
		e.progress(ScenarioConsume, ClientRedrive)
		if err := e.fill(ctx, s.Topic, n); err != nil {
			return nil, err
		}
		rd, err := consumeThrough(ctx, e.redrive, s, n, ScenarioConsume, e.broker, failNone, e.cfg.Timeout)
		if err != nil {
			return nil, err
		}
		raws, rds = append(raws, raw), append(rds, rd)
	}
	raw, rd := medianRow(raws), medianRow(rds)
	compareRounds(&rd, rds, raws, ClientRaw, 0.95)
	return []Row{raw, rd}, nil
}

// rawDrain drains n messages of queue through a raw channel with the
// scenarios' prefetch (8 × Concurrency) and Concurrency goroutines acking
// each, and returns the raw row of scenario. With work, each message is
// handed to it first (the relay scenario's POST): one it fails is
// requeued, not counted.
func (e *rabbitEnv) rawDrain(ctx context.Context, scenario, queue string, n int, work func(amqp.Delivery) error) (Row, error) {
	conn, ch, err := e.consumerChannel()
	if err != nil {
		return Row{}, err
	}
	defer conn.Close()
	m := startMeter()
	dr := newDrain(n)
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return Row{}, fmt.Errorf("raw: consume: %w", err)
	}
	var wg sync.WaitGroup
	for range e.cfg.Concurrency {
		wg.Go(func() {
			for d := range deliveries {
				if work != nil && work(d) != nil {
					_ = d.Nack(false, true)
					continue
				}
				if err := d.Ack(false); err == nil {
					dr.hit()
				}
			}
		})
	}
	err = dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	_ = conn.Close()
	wg.Wait()
	if err != nil {
		return Row{}, fmt.Errorf("raw: %w", err)
	}
	return dr.row(scenario, RabbitMQ, ClientRaw, u), nil
}

// consumerChannel opens a raw connection and channel with the scenarios'
// prefetch (8 × Concurrency), as redrive's consumers get.
func (e *rabbitEnv) consumerChannel() (*amqp.Connection, *amqp.Channel, error) {
	conn, ch, err := e.dial()
	if err != nil {
		return nil, nil, err
	}
	if err := ch.Qos(8*e.cfg.Concurrency, 0, false); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("raw: qos: %w", err)
	}
	return conn, ch, nil
}

// rawFill publishes n messages through the raw client (not measured).
func (e *rabbitEnv) rawFill(ctx context.Context, exchange, key string, n int) error {
	return e.rawFillBatches(ctx, exchange, key, n, 500)
}

// rawFillBatches is rawFill awaiting the confirms every batch messages.
func (e *rabbitEnv) rawFillBatches(ctx context.Context, exchange, key string, n, batch int) error {
	conn, ch, err := e.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("raw: confirm mode: %w", err)
	}
	b := body(e.cfg.Size)
	var confs []*amqp.DeferredConfirmation
	for i := range n {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, amqp.Publishing{
			Headers: amqp.Table{headerSeq: strconv.Itoa(i)}, DeliveryMode: amqp.Persistent,
			MessageId: broker.NewMessageID(), Timestamp: time.Now(), Body: b,
		})
		if err != nil {
			return fmt.Errorf("raw: pre-fill: %w", err)
		}
		confs = append(confs, dc)
		if len(confs) == batch || i == n-1 {
			for _, dc := range confs {
				if _, err := dc.WaitContext(ctx); err != nil {
					return fmt.Errorf("raw: pre-fill: %w", err)
				}
			}
			confs = confs[:0]
		}
	}
	return nil
}
