package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redrive/redrive/broker"
)

// This file holds the configuration of other applications' dead-letter
// queues and topics (kafka.foreign_dlqs, rabbitmq.foreign_dlqs): their
// types, defaults and validation. Clashes with the names of redrive's
// workers are each backend's to find (its Checker).

// Formats of kafka.foreign_dlqs[].format: whose dead-letter headers a
// foreign DLQ topic's records carry.
const (
	// ForeignSpring is Spring Kafka's DeadLetterPublishingRecoverer
	// (kafka_dlt-* headers).
	ForeignSpring = "spring"
	// ForeignConnect is Kafka Connect's dead-letter queue reporter
	// (__connect.errors.* headers, errors.deadletterqueue.context.headers.enable).
	ForeignConnect = "connect"
	// ForeignAuto reads either, by the headers each record carries.
	ForeignAuto = "auto"
)

// ForeignDLQ is one dead-letter topic of another application.
type ForeignDLQ struct {
	// Topic is the dead-letter topic to read; required, a legal topic
	// name, not a topic of redrive's workers (their topics, dead-letter
	// and retry topics) and listed once.
	Topic string `yaml:"topic"`
	// Format is `spring`, `connect` or `auto` (default): whose headers
	// the records carry. A record without them is kept raw (reason
	// unparseable), never dropped.
	Format string `yaml:"format"`
	// Severity is `critical`, `warning` (default) or `info`: the label of
	// the DLQ's metrics and alerts, as for a worker's DLQ.
	Severity broker.Severity `yaml:"severity"`
	// Retention is how long its entries are kept live before they are
	// archived: a duration >= 0 or `forever`; default 30d.
	Retention Retention `yaml:"retention"`
	// ReplayTo is the topic every replay of its entries is published to,
	// whatever topic a record's headers name (they are another
	// application's word, not the operator's); required, a legal topic
	// name, not a dead-letter topic. Every consumer group of that topic
	// receives a replay.
	ReplayTo string `yaml:"replay_to"`
}

// ForeignQueue is one dead-letter queue of other applications on
// RabbitMQ.
type ForeignQueue struct {
	// Queue is the dead-letter queue to read; required, at most 255
	// bytes, not a queue of redrive's (its workers' queues and DLQs, its
	// shared queues) and listed once. The keeper consumes it: every
	// message is stored and acknowledged, so no other consumer should
	// read it.
	Queue string `yaml:"queue"`
	// Severity is `critical`, `warning` (default) or `info`: the label of
	// the DLQ's metrics and alerts, as for a worker's DLQ.
	Severity broker.Severity `yaml:"severity"`
	// Retention is how long its entries are kept live before they are
	// archived: a duration >= 0 or `forever`; default 30d.
	Retention Retention `yaml:"retention"`
	// ReplayTo is where replays of its entries go: required.
	ReplayTo ReplayTarget `yaml:"replay_to"`
}

// ReplayTarget is where the replays of a foreign RabbitMQ DLQ go: either
// an exchange and routing key the operator names, or where each message's
// x-death says it was first published, restricted to the exchanges the
// operator allows. One of the two, never both.
type ReplayTarget struct {
	// Exchange is the exchange every replay is published to, with
	// routing_key, whatever exchange a message's x-death names; at most
	// 255 bytes, not the default exchange.
	Exchange string `yaml:"exchange"`
	// RoutingKey is the routing key of replays published to exchange; at
	// most 255 bytes; may be empty (a fanout exchange).
	RoutingKey string `yaml:"routing_key"`
	// XDeathExchanges replays each message to the exchange and (first)
	// routing key its x-death header names for its first dead-lettering,
	// only when that exchange is one of these; a message without x-death,
	// or naming another exchange, is kept and refused on replay (origin
	// mismatch). Each at most 255 bytes, listed once.
	XDeathExchanges []string `yaml:"x_death_exchanges"`
}

// WithDefaults returns f with format auto, severity warning and retention
// 30d where they are unset.
func (f ForeignDLQ) WithDefaults() ForeignDLQ {
	setDefault(&f.Format, ForeignAuto)
	setDefault(&f.Severity, broker.DefaultSeverity)
	if f.Retention.IsZero() {
		f.Retention = RetainFor(DefaultDLQRetention)
	}
	return f
}

// WithDefaults returns q with its defaults filled in: severity warning,
// retention 30d.
func (q ForeignQueue) WithDefaults() ForeignQueue {
	setDefault(&q.Severity, broker.DefaultSeverity)
	if q.Retention.IsZero() {
		q.Retention = RetainFor(DefaultDLQRetention)
	}
	return q
}

// validateForeignDLQs checks kafka.foreign_dlqs (defaults applied). Clashes
// with the topics of redrive's workers are the backend's to find (their
// names are its own): broker/kafka's Checker.
func validateForeignDLQs(p *problems, fs []ForeignDLQ) {
	topics := map[string]int{}
	for i, f := range fs {
		path := fmt.Sprintf("kafka.foreign_dlqs[%d]", i)
		if checkName(p, path+".topic", f.Topic) {
			if j, dup := topics[f.Topic]; dup {
				p.add(path+".topic", fmt.Sprintf("%q is already kafka.foreign_dlqs[%d].topic", f.Topic, j))
			} else {
				topics[f.Topic] = i
			}
		}
		switch f.Format {
		case ForeignSpring, ForeignConnect, ForeignAuto:
		default:
			p.add(path+".format", fmt.Sprintf("%q is not spring, connect or auto", abbreviate(f.Format)))
		}
		if err := f.Severity.Check(); err != nil {
			p.add(path+".severity", err.Error())
		}
		if !f.Retention.Forever && f.Retention.Duration < 0 {
			p.add(path+".retention", fmt.Sprintf("%s is negative", f.Retention))
		}
		if f.ReplayTo == "" {
			p.add(path+".replay_to", "required: the topic replays of its entries go to (never the one a record names)")
		} else if checkName(p, path+".replay_to", f.ReplayTo) && f.ReplayTo == f.Topic {
			p.add(path+".replay_to", fmt.Sprintf("%q is the dead-letter topic itself", f.ReplayTo))
		}
	}
	for i, f := range fs {
		if j, ok := topics[f.ReplayTo]; ok && f.ReplayTo != f.Topic {
			p.add(fmt.Sprintf("kafka.foreign_dlqs[%d].replay_to", i), fmt.Sprintf("%q is the dead-letter topic of kafka.foreign_dlqs[%d]", f.ReplayTo, j))
		}
	}
}

// maxAMQPName is the longest queue name, exchange name and routing key
// RabbitMQ takes (an AMQP short string).
const maxAMQPName = 255

// validateForeignQueues checks rabbitmq.foreign_dlqs (defaults applied).
func validateForeignQueues(p *problems, qs []ForeignQueue) {
	queues := map[string]int{}
	for i, q := range qs {
		path := fmt.Sprintf("rabbitmq.foreign_dlqs[%d]", i)
		switch {
		case q.Queue == "":
			p.add(path+".queue", "required")
		case len(q.Queue) > maxAMQPName:
			p.add(path+".queue", fmt.Sprintf("%d bytes, over RabbitMQ's %d", len(q.Queue), maxAMQPName))
		case !printableName(q.Queue):
			p.add(path+".queue", fmt.Sprintf("%q holds control characters or invalid UTF-8", abbreviate(q.Queue)))
		default:
			if j, dup := queues[q.Queue]; dup {
				p.add(path+".queue", fmt.Sprintf("%q is already rabbitmq.foreign_dlqs[%d].queue", abbreviate(q.Queue), j))
			} else {
				queues[q.Queue] = i
			}
		}
		if err := q.Severity.Check(); err != nil {
			p.add(path+".severity", err.Error())
		}
		if !q.Retention.Forever && q.Retention.Duration < 0 {
			p.add(path+".retention", fmt.Sprintf("%s is negative", q.Retention))
		}
		q.ReplayTo.validate(p, path+".replay_to")
	}
}

func (r ReplayTarget) validate(p *problems, path string) {
	amqpName := func(path, s string) {
		switch {
		case len(s) > maxAMQPName:
			p.add(path, fmt.Sprintf("%d bytes, over RabbitMQ's %d", len(s), maxAMQPName))
		case !printableName(s):
			p.add(path, fmt.Sprintf("%q holds control characters or invalid UTF-8", abbreviate(s)))
		}
	}
	switch {
	case r.Exchange == "" && len(r.XDeathExchanges) == 0:
		p.add(path, "required: exchange (with routing_key), or x_death_exchanges (the exchanges x-death may name)")
	case r.Exchange != "" && len(r.XDeathExchanges) > 0:
		p.add(path+".x_death_exchanges", "set with exchange: give one or the other")
	case r.Exchange != "":
		amqpName(path+".exchange", r.Exchange)
		amqpName(path+".routing_key", r.RoutingKey)
	default:
		if r.RoutingKey != "" {
			p.add(path+".routing_key", "set with x_death_exchanges: the routing key is the one x-death names")
		}
		for i, x := range r.XDeathExchanges {
			xp := fmt.Sprintf("%s.x_death_exchanges[%d]", path, i)
			switch {
			case x == "":
				p.add(xp, "empty (the default exchange is not a replay target)")
			case slices.Index(r.XDeathExchanges, x) < i:
				p.add(xp, fmt.Sprintf("%q is listed twice", abbreviate(x)))
			default:
				amqpName(xp, x)
			}
		}
	}
}

// printableName reports whether s is valid UTF-8 without control
// characters: what a queue or exchange name of another application may
// hold.
func printableName(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
