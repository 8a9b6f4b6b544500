package daemon

import (
	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/config"
)

// keptDLQs returns the DLQs of the configured workers and their policies.
// RabbitMQ: one per worker, "<topic>.<worker>.dlq". Kafka: one per topic,
// "<topic>.dlq", shared by the topic's workers: the most severe severity
// and the longest retention of those workers apply.
func keptDLQs(c *config.Config) map[string]dlq.Policy {
	out := make(map[string]dlq.Policy, len(c.Workers))
	for _, w := range c.Workers {
		w = w.WithDefaults()
		p := dlq.Policy{Severity: w.DLQ.Severity, Retention: w.DLQ.Retention.Value()}
		if c.Broker != config.BrokerKafka {
			out[rabbit.DLQ(rabbit.Queue(w.Topic, w.Name))] = p
			continue
		}
		name := kafka.DLQTopic(w.Topic)
		if prev, ok := out[name]; ok {
			if severityRank(prev.Severity) > severityRank(p.Severity) {
				p.Severity = prev.Severity
			}
			if prev.Retention == broker.Forever || p.Retention != broker.Forever && prev.Retention > p.Retention {
				p.Retention = prev.Retention
			}
		}
		out[name] = p
	}
	return out
}

// replayRoutes returns the replay route of every configured worker: where
// the entries of its DLQ go back to (never where a message says).
func replayRoutes(c *config.Config) []dlq.Route {
	out := make([]dlq.Route, 0, len(c.Workers))
	for _, w := range c.Workers {
		if c.Broker == config.BrokerKafka {
			out = append(out, kafka.Route(w.Topic, w.Name))
		} else {
			out = append(out, rabbit.Route(w.Topic, w.Name))
		}
	}
	return out
}

// severityRank orders DLQ severities: info < warning < critical.
func severityRank(s string) int {
	switch s {
	case dlq.SeverityCritical:
		return 3
	case dlq.SeverityWarning:
		return 2
	case dlq.SeverityInfo:
		return 1
	}
	return 0
}
