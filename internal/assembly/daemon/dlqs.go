package daemon

import (
	"maps"
	"slices"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// keptDLQs returns the DLQs of the configured workers, as the backend's
// router names them, and the foreign DLQs of the backend's section
// (assembly.ForeignDLQs), with their policies. A DLQ the workers of a
// topic share (Kafka "<topic>.dlq") takes the most severe severity and
// the longest retention of those workers.
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
	for _, f := range assembly.ForeignDLQs(c) {
		out[f.Name] = dlq.Policy{Severity: f.Severity, Retention: f.Retention.Value()}
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
	for _, f := range assembly.ForeignDLQs(c) {
		out = append(out, f.Route)
	}
	return out
}

// DLQNames lists the DLQs the keeper of c keeps, sorted: the configured
// workers' as the backend's router names them, and the foreign DLQs of
// its section. The CLI completes DLQ arguments with them.
func DLQNames(c *config.Config) ([]string, error) {
	r, err := assembly.Router(c)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(keptDLQs(c, r))), nil
}
