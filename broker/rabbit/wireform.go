package rabbit

import (
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// This file converts between amqp091-go's form of a message (its header
// table and basic properties) and wire.Form, which the failure pipeline
// patches and the dead-letter store keeps. Values keep their AMQP types.

// wireTable returns t as a wire.Table, names sorted (AMQP tables have no
// order), without the headers RabbitMQ sets itself (x-death, ...).
func wireTable(t amqp.Table) wire.Table {
	names := make([]string, 0, len(t))
	for k := range t {
		if !brokerOwned(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	out := make(wire.Table, len(names))
	for i, k := range names {
		out[i] = wire.Field{Name: k, Value: wireValue(t[k])}
	}
	return out
}

func wireValue(v any) any {
	switch v := v.(type) {
	case amqp.Decimal:
		return wire.Decimal{Scale: v.Scale, Value: v.Value}
	case amqp.Table:
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range v {
				if !yield(k) {
					return
				}
			}
		})
		out := make(wire.Table, len(names))
		for i, k := range names {
			out[i] = wire.Field{Name: k, Value: wireValue(v[k])}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = wireValue(e)
		}
		return out
	case time.Time:
		return v.UTC()
	}
	return v
}

// amqpTable returns t as an AMQP table (a repeated name keeps its last
// value; RabbitMQ tables have none).
func amqpTable(t wire.Table) amqp.Table {
	out := make(amqp.Table, len(t))
	for _, f := range t {
		out[f.Name] = amqpValue(f.Value)
	}
	return out
}

func amqpValue(v any) any {
	switch v := v.(type) {
	case wire.Decimal:
		return amqp.Decimal{Scale: v.Scale, Value: v.Value}
	case wire.Table:
		return amqpTable(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = amqpValue(e)
		}
		return out
	}
	return v
}

// formOf returns m's exact form as the dead-letter store keeps it: its
// application headers (redrive's own and the broker's left out) and its
// properties.
//
// A copy made by redrive carries the original's expiration and user id as
// the headers HeaderExpiration and HeaderUserID (see republish).
func formOf(m amqp.Delivery) wire.Form {
	p := &wire.Properties{
		ContentType: m.ContentType, ContentEncoding: m.ContentEncoding, DeliveryMode: m.DeliveryMode,
		Priority: m.Priority, CorrelationID: m.CorrelationId, ReplyTo: m.ReplyTo, Expiration: m.Expiration,
		Timestamp: m.Timestamp, Type: m.Type, UserID: m.UserId, AppID: m.AppId,
	}
	if s, ok := m.Headers[HeaderExpiration].(string); ok && p.Expiration == "" {
		p.Expiration = s
	}
	if s, ok := m.Headers[HeaderUserID].(string); ok && p.UserID == "" {
		p.UserID = s
	}
	return wire.Form{Headers: wireTable(m.Headers).App(), Props: p}
}

// storyTable returns the headers of a retry, delay or dead-letter copy of m
// after failure o: m's headers with their types (the broker's left out),
// redrive's story of this failure patched in (driver.Patch), and no delay
// bookkeeping (the caller adds what the copy's wait needs).
func storyTable(m amqp.Delivery, d *broker.Delivery, o driver.Outcome, now time.Time) amqp.Table {
	return amqpTable(driver.Patch(wireTable(m.Headers), d, o, now, broker.HeaderRemainingDelay, HeaderTierPasses))
}

// publishing returns a message with f's headers and properties, as a
// replay sends it: every property but expiration (the copy would expire)
// and user id (RabbitMQ checks it against the publishing connection).
func publishing(f wire.Form, h amqp.Table) amqp.Publishing {
	p := amqp.Publishing{Headers: h, DeliveryMode: amqp.Persistent}
	if f.Props != nil {
		pr := f.Props
		p.ContentType, p.ContentEncoding, p.DeliveryMode, p.Priority = pr.ContentType, pr.ContentEncoding, pr.DeliveryMode, pr.Priority
		p.CorrelationId, p.ReplyTo, p.Timestamp, p.Type, p.AppId = pr.CorrelationID, pr.ReplyTo, pr.Timestamp, pr.Type, pr.AppID
	}
	return p
}
