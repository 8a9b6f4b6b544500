// Package wire is a message's exact wire form, kept beside the string view
// handlers see ([broker.Delivery] Headers): its headers with their types,
// in wire order, names possibly repeated, and, on RabbitMQ, its properties.
//
// Both backends convert their client's form to and from a [Form] at their
// edges (RabbitMQ: an AMQP field table and the basic properties; Kafka: the
// record headers), so that what a retry copy, a dead-letter copy and a
// replay carry is decided once, here: the application's headers exactly as
// they arrived, plus redrive's own x-redrive-* headers (see [Table.Patch]).
// The dead-letter store keeps a Form as the opaque, versioned bytes of
// [Encode]; the admin API and the console show it through [Form.View].
//
// A header value is one of these Go types (the AMQP field types; a Kafka
// header value is always []byte, or nil for a null value):
//
//	nil (void), bool, int8, uint8, int16, uint16, int32, uint32, int64,
//	float32, float64, Decimal, time.Time (whole seconds), string, []byte,
//	Table (a nested field table), []any (a field array)
package wire

import (
	"slices"
	"strings"
	"time"

	"github.com/redrive/redrive/broker"
)

// Form is a message's wire form, body and key aside.
type Form struct {
	// Headers in wire order. A Kafka record may repeat a name; an AMQP
	// table cannot (its converter sorts names, AMQP tables being
	// unordered).
	Headers Table
	// Props are the AMQP basic properties; nil on Kafka, which has none.
	Props *Properties
}

// Properties are the AMQP basic properties of a message, message id aside
// (it is the entry's MessageID). Zero values are absent properties: AMQP
// clients do not tell an absent property from a zero one.
type Properties struct {
	ContentType     string
	ContentEncoding string
	DeliveryMode    uint8 // 1 transient, 2 persistent
	Priority        uint8
	CorrelationID   string
	ReplyTo         string
	// Expiration is kept but not set on a redelivered message: it would
	// make the broker expire the copy.
	Expiration string
	Timestamp  time.Time // whole seconds
	Type       string
	// UserID is kept but not set on a redelivered message: RabbitMQ checks
	// it against the publishing connection's user.
	UserID string
	AppID  string
}

// Table is a list of headers (or the fields of a nested table) in wire
// order.
type Table []Field

// Field is one header: a name (any bytes on Kafka) and a typed value.
type Field struct {
	Name  string
	Value any
}

// Decimal is an AMQP decimal: Value × 10^-Scale.
type Decimal struct {
	Scale uint8
	Value int32
}

// Own reports whether a header name is redrive's own (x-redrive-*, and
// x-remaining-delay on RabbitMQ delay hops) rather than the application's.
func Own(name string) bool {
	return strings.HasPrefix(name, broker.HeaderPrefix) || name == broker.HeaderRemainingDelay
}

// App returns the headers of t that are the application's (not [Own]), in
// order. It shares t's values.
func (t Table) App() Table {
	out := make(Table, 0, len(t))
	for _, f := range t {
		if !Own(f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// Patch returns a copy of t without the headers named in set or del, then
// the headers of set as strings, sorted by name: a copy's headers after a
// failure (set and del from the failure pipeline's Story) keep the application's in
// their order and types, and carry redrive's story last.
func (t Table) Patch(set map[string]string, del ...string) Table {
	out := make(Table, 0, len(t)+len(set))
	for _, f := range t {
		if _, ok := set[f.Name]; ok || slices.Contains(del, f.Name) {
			continue
		}
		out = append(out, f)
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		out = append(out, Field{Name: k, Value: set[k]})
	}
	return out
}

// Get returns the value of the last header named name (a repeated name
// reads as its last value, as in the string view).
func (t Table) Get(name string) (any, bool) {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i].Name == name {
			return t[i].Value, true
		}
	}
	return nil, false
}

// Strings is the string view of t: every header whose value has a text
// form ([Text]; nested tables and arrays have none), a repeated name
// keeping its last value.
func (t Table) Strings() map[string]string {
	h := make(map[string]string, len(t))
	for _, f := range t {
		if s, ok := Text(f.Value); ok {
			h[f.Name] = s
		}
	}
	return h
}
