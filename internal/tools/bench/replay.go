package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// replay: operate.Ops.ReplayAll of ReplayMessages entries of an in-memory
// store (a status change and an audit row per entry, each replay awaiting
// its confirm) vs a raw publish of the same messages, one confirm at a
// time, through a direct exchange to a queue as the retry exchange does.
func (e *rabbitEnv) replay(ctx context.Context) ([]Row, error) {
	n := e.cfg.ReplayMessages
	b := body(e.cfg.Size)

	// raw
	e.progress(ScenarioReplay, ClientRaw)
	_, queue, err := e.rawQueue("replay", "replay")
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
	lat := make([]time.Duration, 0, n)
	m := startMeter()
	for i := range n {
		t0 := time.Now()
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
			Headers:      amqp.Table{headerSeq: strconv.Itoa(i), broker.HeaderReplayedFrom: "bench/" + strconv.Itoa(i)},
			DeliveryMode: amqp.Persistent, MessageId: broker.NewMessageID(), Body: b,
		})
		if err != nil {
			return nil, fmt.Errorf("raw: publish: %w", err)
		}
		if ok, err := dc.WaitContext(ctx); err != nil || !ok {
			return nil, fmt.Errorf("raw: confirm: ack %v, %w", ok, err)
		}
		lat = append(lat, time.Since(t0))
	}
	el, u := m.stop()
	raw := row(ScenarioReplay, RabbitMQ, ClientRaw, n, el, u).withLatencies(lat)
	_ = conn.Close()
	if err := e.purge(queue); err != nil {
		return []Row{raw}, err
	}

	// redrive
	e.progress(ScenarioReplay, ClientRedrive)
	s, err := e.sub(ctx, "replay")
	if err != nil {
		return []Row{raw}, err
	}
	src := rabbit.Queue(s.Topic, s.Group)
	st := memstore.New(memstore.Config{Logger: e.cfg.Logger})
	for i := range n {
		id := broker.NewMessageID()
		_, _, err := st.Insert(ctx, dlq.Record{Broker: rabbit.Name, DLQ: rabbit.DLQ(src), Identity: id, Entry: dlq.Entry{
			MessageID: id, OriginalTopic: s.Topic, OriginalValue: b, Source: src,
			OriginalHeaders: map[string]string{headerSeq: strconv.Itoa(i)},
		}})
		if err != nil {
			return []Row{raw}, fmt.Errorf("memstore insert: %w", err)
		}
	}
	ops, err := operate.New(operate.Config{Store: st, Republisher: e.b, Logger: e.cfg.Logger,
		Routes: []dlq.Route{rabbit.Route(s.Topic, s.Group)}})
	if err != nil {
		return []Row{raw}, err
	}
	lat = lat[:0]
	last := time.Now()
	m = startMeter()
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: rabbit.DLQ(src)}, operate.ReplayAllOptions{
		Actor: "bench",
		Progress: func(p operate.Progress) {
			if now := time.Now(); p.Replayed > 0 && !p.Done {
				lat = append(lat, now.Sub(last))
				last = now
			}
		},
	})
	el, u = m.stop()
	if err != nil {
		return []Row{raw}, err
	}
	if p.Replayed != int64(n) {
		return []Row{raw}, fmt.Errorf("replayed %d of %d entries (%d skipped, %d failed, %d mismatched)", p.Replayed, n, p.Skipped, p.Failed, p.Mismatched)
	}
	rd := row(ScenarioReplay, RabbitMQ, ClientRedrive, n, el, u).withLatencies(lat)
	rd.Note = "memstore, status change + audit row per entry"
	compare(&rd, raw, ClientRaw, 0.8) // issue 8: replay ≥ 0.8 × raw publish
	if err := e.purge(src); err != nil {
		return []Row{raw, rd}, err
	}
	return []Row{raw, rd}, nil
}
