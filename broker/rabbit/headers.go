package rabbit

import (
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// toTable turns string headers into an AMQP table.
func toTable(h map[string]string) amqp.Table {
	t := make(amqp.Table, len(h))
	for k, v := range h {
		t[k] = v
	}
	return t
}

// brokerOwned reports headers RabbitMQ sets itself when it dead-letters or
// redelivers a message; they are not the application's and are not
// carried over when redrive republishes.
func brokerOwned(k string) bool {
	return k == "x-death" || k == "x-delivery-count" ||
		strings.HasPrefix(k, "x-first-death-") || strings.HasPrefix(k, "x-last-death-")
}

// fromTable turns an AMQP table into the string view of a delivery's
// headers (wire.Text): values of other types (from foreign producers) are
// rendered as text; broker-owned headers, nested tables and arrays are left
// out (see parseDeath for x-death; the exact form is wireTable's).
func fromTable(t amqp.Table) map[string]string {
	h := make(map[string]string, len(t))
	for k, v := range t {
		if brokerOwned(k) {
			continue
		}
		if s, ok := headerText(v); ok {
			h[k] = s
		}
	}
	return h
}

// onDemandTable reads a delivery's AMQP headers for a HeadersOnDemand
// delivery (driver.HeaderReader): the headers fromTable would give.
type onDemandTable amqp.Table

// Header implements driver.HeaderReader.
func (t onDemandTable) Header(key string) (string, bool) {
	v, ok := t[key]
	if !ok || brokerOwned(key) || key == broker.HeaderRemainingDelay {
		return "", false
	}
	return headerText(v)
}

// Range implements driver.HeaderReader.
func (t onDemandTable) Range(f func(key, value string) bool) {
	for k, v := range t {
		if brokerOwned(k) || k == broker.HeaderRemainingDelay {
			continue
		}
		if s, ok := headerText(v); ok && !f(k, s) {
			return
		}
	}
}

// headerText is a header's value as the handler sees it (wire.Text).
func headerText(v any) (string, bool) {
	if d, ok := v.(amqp.Decimal); ok {
		v = wire.Decimal{Scale: d.Scale, Value: d.Value}
	}
	return wire.Text(v)
}

// Death is one entry of RabbitMQ's x-death header: why and where the broker
// dead-lettered a message.
type Death struct {
	Queue    string
	Reason   string // expired, rejected, maxlen, delivery_limit
	Count    int64
	Exchange string
	Time     time.Time
	// RoutingKeys are the routing keys the message was published with
	// (at most 16 are read).
	RoutingKeys []string
}

// parseDeath reads x-death defensively: foreign producers may send anything.
func parseDeath(t amqp.Table) []Death {
	raw, ok := t["x-death"].([]any)
	if !ok {
		return nil
	}
	out := make([]Death, 0, min(len(raw), 64))
	for _, e := range raw {
		if len(out) == 64 {
			break
		}
		m, ok := e.(amqp.Table)
		if !ok {
			continue
		}
		var d Death
		d.Queue, _ = m["queue"].(string)
		d.Reason, _ = m["reason"].(string)
		d.Exchange, _ = m["exchange"].(string)
		d.Time, _ = m["time"].(time.Time)
		if y := d.Time.Year(); y < 1 || y > 9999 {
			d.Time = time.Time{} // a foreign timestamp no envelope can carry
		}
		if keys, ok := m["routing-keys"].([]any); ok {
			for _, k := range keys[:min(len(keys), 16)] {
				if s, ok := k.(string); ok {
					d.RoutingKeys = append(d.RoutingKeys, s)
				}
			}
		}
		switch c := m["count"].(type) {
		case int64:
			d.Count = c
		case int32:
			d.Count = int64(c)
		case int:
			d.Count = int64(c)
		}
		out = append(out, d)
	}
	return out
}

// deathReason maps a broker dead-letter reason to redrive's.
func deathReason(r string) string {
	switch r {
	case "expired":
		return string(driver.ReasonExpired)
	case "maxlen":
		return string(driver.ReasonMaxLength)
	case "rejected":
		return string(driver.ReasonRejected)
	case "delivery_limit": // a quorum queue's x-delivery-limit (max_claims or rabbitmq.delivery_limit)
		return string(driver.ReasonDeliveryLimit)
	}
	return r
}

func remainingDelay(h amqp.Table) time.Duration {
	switch v := h[broker.HeaderRemainingDelay].(type) {
	case int64:
		return time.Duration(v) * time.Millisecond
	case int32:
		return time.Duration(v) * time.Millisecond
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(n) * time.Millisecond
		}
	}
	return 0
}

func intHeader(h amqp.Table, k string) int {
	switch v := h[k].(type) {
	case int64:
		return int(v)
	case int32:
		return int(v)
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}
