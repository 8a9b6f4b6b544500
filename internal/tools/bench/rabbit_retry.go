package bench

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// headerRawAttempt marks the raw retry scenario's copies: a delivery that
// carries it is a second attempt and does not fail again.
const headerRawAttempt = "bench-attempt"

// rawRetry measures the raw client doing the retry scenario's work with
// redrive's guarantee: n messages pre-filled in a raw queue, drained with
// the same prefetch and handler goroutines as rawDrain; every 10th fails
// once, and its copy (the message's headers, an attempt and an error
// header) is published back to the queue on a confirm-mode channel of a
// connection of its own, the original acked only once the copy is
// confirmed. The handler does not wait for the confirm (as redrive's
// forwarders, a goroutine acks), so the row is the broker's limit for
// this work, which the ideal bound (idealRetry) only estimates.
func (e *rabbitEnv) rawRetry(ctx context.Context) (Row, error) {
	n := e.cfg.Messages
	exchange, queue, err := e.rawQueue("retry", "retry")
	if err != nil {
		return Row{}, err
	}
	e.progress(ScenarioRetry, ClientRaw)
	if err := e.rawFill(ctx, exchange, "retry", n); err != nil {
		return Row{}, err
	}
	conn, ch, err := e.consumerChannel()
	if err != nil {
		return Row{}, err
	}
	defer conn.Close()
	pconn, pch, err := e.dial()
	if err != nil {
		return Row{}, err
	}
	defer pconn.Close()
	if err := pch.Confirm(false); err != nil {
		return Row{}, fmt.Errorf("raw: confirm mode: %w", err)
	}
	m := startMeter()
	dr := newDrain(n)
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return Row{}, fmt.Errorf("raw: consume: %w", err)
	}
	var wg, acks sync.WaitGroup
	for range e.cfg.Concurrency {
		wg.Go(func() {
			for d := range deliveries {
				seq, _ := strconv.Atoi(fmt.Sprint(d.Headers[headerSeq]))
				if _, again := d.Headers[headerRawAttempt]; again || seq%10 != 0 {
					if d.Ack(false) == nil {
						dr.hit()
					}
					continue
				}
				h := amqp.Table{headerRawAttempt: int32(2), "bench-error": errBench.Error()}
				maps.Copy(h, d.Headers)
				dc, err := pch.PublishWithDeferredConfirmWithContext(ctx, exchange, "retry", true, false, amqp.Publishing{
					Headers: h, DeliveryMode: amqp.Persistent, MessageId: d.MessageId,
					Timestamp: d.Timestamp, Body: d.Body,
				})
				if err != nil {
					_ = d.Nack(false, true)
					continue
				}
				acks.Go(func() {
					if ok, err := dc.WaitContext(ctx); err != nil || !ok {
						_ = d.Nack(false, true)
						return
					}
					_ = d.Ack(false)
				})
			}
		})
	}
	err = dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	_ = conn.Close()
	_ = pconn.Close()
	wg.Wait()
	acks.Wait()
	if err != nil {
		return Row{}, fmt.Errorf("raw: %w", err)
	}
	r := dr.row(ScenarioRetry, RabbitMQ, ClientRaw, u)
	r.Note = rabbitNotes[failRetry] + ", copy confirmed before the ack; " + r.Note
	return r, nil
}
