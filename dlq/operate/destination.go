package operate

import "github.com/redrive/redrive/dlq"

// Destination is where a replay of r goes, as Route.Destination names
// it: its route (Target), from the configuration; "" when it cannot be
// replayed (Target's error says why).
func (o *Ops) Destination(r dlq.Record) string {
	rt, err := o.Target(r)
	if err != nil {
		return ""
	}
	return rt.Destination(r.Broker)
}
