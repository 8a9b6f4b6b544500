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
	return withDefaults(c, broker.RabbitMQ, c.RabbitMQ.ForeignDLQs)
}

// foreignDLQs returns the foreign DLQ topics of c with their defaults;
// none unless the broker is Kafka.
func foreignDLQs(c *config.Config) []config.ForeignDLQ {
	return withDefaults(c, broker.Kafka, c.Kafka.ForeignDLQs)
}

// withDefaults returns list with each element's defaults when c's broker
// is b; none otherwise (the section of another broker is not read).
func withDefaults[T interface{ WithDefaults() T }](c *config.Config, b broker.Backend, list []T) []T {
	if c.Broker != b {
		return nil
	}
	out := make([]T, len(list))
	for i, v := range list {
		out[i] = v.WithDefaults()
	}
	return out
}

// DLQNames lists the DLQs the keeper of c keeps, sorted: the configured
// workers' as the backend's router names them, and the foreign DLQ topics
// and queues (kafka.foreign_dlqs, rabbitmq.foreign_dlqs). The CLI
// completes DLQ arguments with them.
func DLQNames(c *config.Config) ([]string, error) {
	r, err := backend.RouterOf(c)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(keptDLQs(c, r))), nil
}
