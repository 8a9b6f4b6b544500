package daemon

import (
	"maps"
	"slices"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
)

// keptDLQs returns the DLQs of the configured workers, as the backend's
// router names them, and the foreign DLQ topics and queues
// (kafka.foreign_dlqs, rabbitmq.foreign_dlqs), with their policies. A DLQ the workers of a topic share (Kafka "<topic>.dlq")
// takes the most severe severity and the longest retention of those
// workers.
func keptDLQs(c *config.Config, r dlq.Router) map[string]dlq.Policy {
	out := make(map[string]dlq.Policy, len(c.Workers))
	for _, w := range c.Workers {
		w = w.WithDefaults()
		p := dlq.Policy{Severity: w.DLQ.Severity, Retention: w.DLQ.Retention.Value()}
		name := r.Route(w.Topic, w.Name).DLQ
		if prev, ok := out[name]; ok {
			p = prev.Merge(p)
		}
		out[name] = p
	}
	for _, f := range foreignDLQs(c) {
		out[f.Topic] = dlq.Policy{Severity: f.Severity, Retention: f.Retention.Value()}
	}
	for _, q := range foreignQueues(c) {
		out[q.Queue] = dlq.Policy{Severity: q.Severity, Retention: q.Retention.Value()}
	}
	return out
}

// replayRoutes returns the replay route of every configured worker (one
// declared foreign: the backend's ForeignWorkerRoute) and foreign DLQ: where the
// entries of its DLQ go back to (never where a message says).
func replayRoutes(c *config.Config, r dlq.Router) []dlq.Route {
	out := make([]dlq.Route, 0, len(c.Workers))
	for _, w := range c.Workers {
		if w.Foreign {
			out = append(out, r.ForeignWorkerRoute(w.Topic, w.Name))
			continue
		}
		out = append(out, r.Route(w.Topic, w.Name))
	}
	for _, f := range foreignDLQs(c) {
		out = append(out, dlq.ForeignRoute(f.Topic, f.ReplayTo))
	}
	for _, q := range foreignQueues(c) {
		to := q.ReplayTo
		out = append(out, rabbit.ForeignRoute(q.Queue, rabbit.ForeignTarget{Exchange: to.Exchange, RoutingKey: to.RoutingKey, XDeathExchanges: to.XDeathExchanges}))
	}
	return out
}

// foreignQueues returns the foreign DLQ queues of c with their defaults;
// none unless the broker is RabbitMQ.
func foreignQueues(c *config.Config) []config.ForeignQueue {
	if c.Broker != broker.RabbitMQ {
		return nil
	}
	out := make([]config.ForeignQueue, len(c.RabbitMQ.ForeignDLQs))
	for i, q := range c.RabbitMQ.ForeignDLQs {
		out[i] = q.WithDefaults()
	}
	return out
}

// foreignDLQs returns the foreign DLQ topics of c with their defaults;
// none unless the broker is Kafka.
func foreignDLQs(c *config.Config) []config.ForeignDLQ {
	if c.Broker != broker.Kafka {
		return nil
	}
	out := make([]config.ForeignDLQ, len(c.Kafka.ForeignDLQs))
	for i, f := range c.Kafka.ForeignDLQs {
		out[i] = f.WithDefaults()
	}
	return out
}

// DLQNames lists the DLQs the keeper of c keeps, sorted: the configured
// workers' as the backend's router names them, and the foreign DLQ topics
// (kafka.foreign_dlqs). The CLI completes DLQ arguments with them.
func DLQNames(c *config.Config) ([]string, error) {
	r, err := backend.RouterOf(c)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(keptDLQs(c, r))), nil
}
