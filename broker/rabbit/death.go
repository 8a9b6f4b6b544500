package rabbit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// This file reads what RabbitMQ writes when it dead-letters a message
// (x-death), into a dead letter's entry and, for a foreign DLQ whose
// replays go where x-death says, into its replay route.

// deadLetterForm is the exact form the store keeps of a message read from
// a dead-letter queue: formOf's (the application's headers and the
// properties) and, after them, the headers RabbitMQ wrote when it
// dead-lettered the message (x-death with its types, x-first-death-*,
// x-last-death-*, x-delivery-count), so that the entry keeps the broker's
// story. A replay does not send them (Republish).
func deadLetterForm(m amqp.Delivery) wire.Form {
	f := formOf(m)
	var owned []string
	for k := range m.Headers {
		if brokerOwned(k) {
			owned = append(owned, k)
		}
	}
	slices.Sort(owned)
	for _, k := range owned {
		f.Headers = append(f.Headers, wire.Field{Name: k, Value: wireValue(m.Headers[k])})
	}
	return f
}

// storyFromDeath fills what e does not say yet from deaths (x-death, the
// latest first): the reason, the queue the message died in (Source), the
// routing key it was published with (the topic), the worker of a
// "<topic>.<group>" queue, the times of the first and latest death, and
// an error message telling the whole story: queue, reason, count, time,
// exchange and routing keys of each death.
func storyFromDeath(e *driver.Entry, deaths []Death) {
	if len(deaths) == 0 {
		return
	}
	d := deaths[0]
	e.Reason = deathReason(d.Reason)
	if e.Source == "" {
		e.Source = d.Queue
	}
	if e.OriginalTopic == "" && len(d.RoutingKeys) > 0 {
		e.OriginalTopic = d.RoutingKeys[0] // as published: the topic
	}
	if w, ok := strings.CutPrefix(d.Queue, e.OriginalTopic+"."); ok && e.Worker == "" && e.OriginalTopic != "" {
		e.Worker = w // the group queue is "<topic>.<group>"
	}
	if e.ErrorClass == "" {
		e.ErrorClass = e.Reason
	}
	if e.ErrorMessage == "" {
		e.ErrorMessage = deathMessage(deaths)
	}
	if e.LastFailureAt.IsZero() {
		e.LastFailureAt = d.Time
	}
	if e.FirstFailureAt.IsZero() {
		e.FirstFailureAt = deaths[len(deaths)-1].Time
	}
}

// Bounds of deathMessage: the deaths it tells and the routing keys of
// each (the whole x-death stays in the entry's wire form).
const (
	toldDeaths = 8
	toldKeys   = 4
)

// deathMessage tells the story of deaths, the latest first, at most
// toldDeaths of them with toldKeys routing keys each:
//
//	dead-lettered by RabbitMQ from queue attune.executions.q: expired (1 time, 2025-01-15T10:30:00Z; published to exchange "attune.executions" with routing keys ["execution.requested"])
func deathMessage(deaths []Death) string {
	var b strings.Builder
	for i, d := range deaths {
		if i == toldDeaths {
			fmt.Fprintf(&b, "; and %d earlier deaths (see x-death)", len(deaths)-i)
			break
		}
		if i > 0 {
			b.WriteString("; before that from queue ")
		} else {
			b.WriteString("dead-lettered by RabbitMQ from queue ")
		}
		b.WriteString(d.Queue)
		b.WriteString(": ")
		b.WriteString(d.Reason)
		times := "times"
		if d.Count == 1 {
			times = "time"
		}
		fmt.Fprintf(&b, " (%d %s", d.Count, times)
		if !d.Time.IsZero() {
			b.WriteString(", ")
			b.WriteString(d.Time.UTC().Format(time.RFC3339))
		}
		b.WriteString("; published to exchange ")
		b.WriteString(strconv.Quote(d.Exchange))
		b.WriteString(" with routing keys [")
		for j, k := range d.RoutingKeys {
			if j == toldKeys {
				fmt.Fprintf(&b, " +%d", len(d.RoutingKeys)-j)
				break
			}
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Quote(k))
		}
		b.WriteString("])")
	}
	return b.String()
}

// ForeignTarget is where the replays of a foreign dead-letter queue go
// (rabbitmq.foreign_dlqs[].replay_to): the Exchange and RoutingKey the
// operator names, or, with XDeathExchanges, where each message's x-death
// says it was first published (the exchange and first routing key of its
// oldest death), only when that exchange is one of XDeathExchanges.
type ForeignTarget struct {
	Exchange, RoutingKey string
	XDeathExchanges      []string
}

// ForeignRoute is the replay route of another application's dead-letter
// queue on RabbitMQ (rabbitmq.foreign_dlqs): every entry of queue replays
// to the exchange and routing key of to, or where its x-death says it was
// published when that exchange is allowed; never to a place the message
// alone names. An entry without x-death, or whose x-death names an
// exchange not allowed, is refused (driver.ErrOriginMismatch).
func ForeignRoute(queue string, to ForeignTarget) driver.Route {
	if len(to.XDeathExchanges) == 0 {
		return driver.Route{DLQ: queue, Exchange: to.Exchange, Target: to.RoutingKey, Foreign: true}
	}
	allowed := slices.Clone(to.XDeathExchanges)
	rt := driver.Route{DLQ: queue, Foreign: true, Exchanges: allowed}
	rt.Resolve = func(e driver.Entry) (driver.Route, error) {
		d, ok := firstDeath(e)
		switch {
		case !ok:
			return driver.Route{}, fmt.Errorf("%w: the entry of %q has no x-death naming the exchange it was published to; its DLQ replays only where x-death says (one of %s)",
				driver.ErrOriginMismatch, queue, strings.Join(allowed, ", "))
		case !slices.Contains(allowed, d.Exchange):
			return driver.Route{}, fmt.Errorf("%w: the entry's x-death names exchange %.200q, not one of %s that %q may replay to; refusing to replay it",
				driver.ErrOriginMismatch, d.Exchange, strings.Join(allowed, ", "), queue)
		case len(d.RoutingKeys) == 0:
			return driver.Route{}, fmt.Errorf("%w: the entry's x-death names exchange %q but no routing key", driver.ErrOriginMismatch, d.Exchange)
		}
		return driver.Route{DLQ: queue, Exchange: d.Exchange, Target: d.RoutingKeys[0], Foreign: true}, nil
	}
	return rt
}

// firstDeath is the oldest x-death record kept in e's wire form (x-death
// lists the latest first): where the message was first published.
func firstDeath(e driver.Entry) (Death, bool) {
	if e.OriginalWire == nil {
		return Death{}, false
	}
	f, err := wire.Decode(e.OriginalWire)
	if err != nil {
		return Death{}, false
	}
	for _, field := range f.Headers {
		if field.Name == "x-death" {
			deaths := parseDeath(amqp.Table{"x-death": amqpValue(field.Value)})
			if len(deaths) == 0 {
				return Death{}, false
			}
			return deaths[len(deaths)-1], true
		}
	}
	return Death{}, false
}
