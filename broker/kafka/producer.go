package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// recordOverhead is a generous estimate of what a one-record batch adds to
// the key, value and headers on the wire (batch header, record framing,
// varints).
const recordOverhead = 128

// Publish sends msgs to topic and returns once every record was
// acknowledged by all in-sync replicas. Records are produced all at once and
// awaited together. The topic is created (Config.Partitions) when it does not
// exist. A message over Config.MaxMessageBytes fails the whole call with an
// error wrapping broker.ErrTooLarge before anything is sent.
func (b *Broker) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	return b.publish(ctx, topic, time.Time{}, msgs)
}

// PublishDelayed is Publish with delivery no earlier than delay from now:
// the records go to topic itself with an x-redrive-due-at header, and every
// group's consumer holds the record's partition until it is due. A delayed
// record also delays the records behind it in its partition.
func (b *Broker) PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...broker.Message) error {
	var due time.Time
	if delay > 0 {
		due = dueAt(time.Now(), delay)
	}
	return b.publish(ctx, topic, due, msgs)
}

func (b *Broker) publish(ctx context.Context, topic string, due time.Time, msgs []broker.Message) error {
	if b.isClosed() {
		return broker.ErrClosed
	}
	if topic == "" {
		return errors.New("kafka: publish: topic is empty")
	}
	if len(msgs) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, len(msgs))
	now := time.Now() // one clock read a call, not a message
	for i, m := range msgs {
		r := newRecord(topic, m, due, now)
		if n := recordSize(r); n > b.cfg.MaxMessageBytes {
			return fmt.Errorf("kafka: publish to %q: message %d (id %s) is about %d bytes, over the %d byte limit: %w",
				topic, i, messageID(r), n, b.cfg.MaxMessageBytes, broker.ErrTooLarge)
		}
		recs[i] = r
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.DeliveryTimeout)
	defer cancel()
	if err := b.ensureTopic(ctx, topic); err != nil {
		return fmt.Errorf("kafka: publish to %q (brokers %s): %w", topic, b.brokerList(), err)
	}
	if err := b.produce(ctx, recs...); err != nil {
		return fmt.Errorf("kafka: publish %d message(s) to %q (brokers %s): %w", len(recs), topic, b.brokerList(), err)
	}
	return nil
}

// produce writes recs (pipelined) and waits until every one is acknowledged.
// It returns the first error, wrapping broker.ErrTooLarge when the broker
// refused a record for its size. Callers bound ctx: when it ends, franz-go
// fails the records not yet acknowledged (and every record buffered for the
// same partitions, keeping each partition gapless).
func (b *Broker) produce(ctx context.Context, recs ...*kgo.Record) error {
	err := b.prod.ProduceSync(ctx, recs...).FirstErr()
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		return fmt.Errorf("%w: %w", broker.ErrTooLarge, err)
	}
	return err
}

// newRecord builds the record of m: key, headers plus the message id, the
// due time when delayed, and the message's timestamp (now when zero: the
// messages of one Publish call share it).
//
// The headers are built directly as record headers, the application's
// sorted by name (so that records are reproducible), then
// x-redrive-message-id and x-redrive-due-at; all header values share one
// allocation.
func newRecord(topic string, m broker.Message, due, now time.Time) *kgo.Record {
	id := m.ID
	var dueAt string
	if !due.IsZero() {
		dueAt = wire.FormatTime(due)
	}
	// One pass over the map: names into hs, values aside until the
	// buffer that holds them all is sized.
	hs := make([]kgo.RecordHeader, 0, len(m.Headers)+2)
	var small [8]string
	vs := small[:0]
	size := len(id) + len(dueAt)
	for k, v := range m.Headers {
		switch {
		case k == driver.HeaderMessageID:
			if id == "" {
				id = v
				size += len(v)
			}
			continue
		case k == driver.HeaderDueAt && dueAt != "":
			continue
		}
		hs = append(hs, kgo.RecordHeader{Key: k})
		vs = append(vs, v)
		size += len(v)
	}
	if id == "" {
		size += 32 // a new id (driver.AppendMessageID)
	}
	vals := make([]byte, 0, size)
	value := func(s string) []byte {
		start := len(vals)
		vals = append(vals, s...)
		return vals[start:len(vals):len(vals)]
	}
	for i, v := range vs {
		hs[i].Value = value(v)
	}
	if len(hs) > 1 {
		slices.SortFunc(hs, func(a, b kgo.RecordHeader) int { return strings.Compare(a.Key, b.Key) })
	}
	var idv []byte
	if id != "" {
		idv = value(id)
	} else {
		start := len(vals)
		vals = driver.AppendMessageID(vals)
		idv = vals[start:len(vals):len(vals)]
	}
	hs = append(hs, kgo.RecordHeader{Key: driver.HeaderMessageID, Value: idv})
	if dueAt != "" {
		hs = append(hs, kgo.RecordHeader{Key: driver.HeaderDueAt, Value: value(dueAt)})
	}
	ts := m.Timestamp
	if ts.IsZero() {
		ts = now
	}
	return &kgo.Record{Topic: topic, Key: m.Key, Value: m.Value, Headers: hs, Timestamp: ts}
}

// fromHeaders reads record headers; a repeated name keeps its last value.
func fromHeaders(hs []kgo.RecordHeader) map[string]string {
	h := make(map[string]string, len(hs))
	for _, x := range hs {
		h[x.Key] = string(x.Value)
	}
	return h
}

// recordSize estimates r's size on the wire.
func recordSize(r *kgo.Record) int {
	n := recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}

// messageID returns r's x-redrive-message-id header.
func messageID(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == driver.HeaderMessageID {
			return string(h.Value)
		}
	}
	return ""
}
