package dlq

import (
	"strconv"
	"strings"

	"github.com/redrive/redrive/broker"
)

// Destination names where a replay goes, for people, the one way the
// console, the CLI, the admin API and the audit log show it: the queue
// (RabbitMQ) or topic (Kafka) the replay is published to, and the worker
// that handles it there:
//
//	queue escrow.commands.payout-executor (worker payout-executor)
//	topic escrow.commands.retry.payout-executor (worker payout-executor)
//
// With no worker (a topic every group of reads) it says so. An empty
// target is "". Route.Destination names every kind of route.
func Destination(brokerName broker.Backend, target, worker string) string {
	return Route{Target: target, Worker: worker, EveryGroup: worker == ""}.Destination(brokerName)
}

// Destination names where a replay on rt goes (see the package function
// Destination), saying when every group of a topic receives it:
//
//	topic escrow.commands (every consumer group of it, worker payout-executor among them)
//	topic orders-replay (every consumer group of it)
//	exchange attune.executions, routing key execution.requested (every queue it routes to)
//	the exchange x-death names (one of attune.executions, attune.jobs), with its routing key
//
// The last is an x-death route not yet resolved for an entry (a
// listing); "" when rt has no target.
func (rt Route) Destination(b broker.Backend) string {
	switch {
	case rt.Resolve != nil:
		return "the exchange x-death names (one of " + strings.Join(rt.Exchanges, ", ") + "), with its routing key"
	case rt.Exchange != "":
		return "exchange " + rt.Exchange + ", routing key " + strconv.Quote(rt.Target) + " (every queue it routes to)"
	case rt.Target == "":
		return ""
	}
	unit, every := "queue", "every queue bound to it"
	if b == broker.Kafka {
		unit, every = "topic", "every consumer group of it"
	}
	switch {
	case rt.EveryGroup && rt.Worker != "":
		return "topic " + rt.Target + " (" + every + ", worker " + rt.Worker + " among them)"
	case rt.EveryGroup || rt.Worker == "":
		return "topic " + rt.Target + " (" + every + ")"
	}
	return unit + " " + rt.Target + " (worker " + rt.Worker + ")"
}

// Destination is where a replay of r goes, as Route.Destination names
// it: its route (Target), from the configuration; "" when it cannot be
// replayed (Target's error says why).
func (o *Ops) Destination(r Record) string {
	rt, err := o.Target(r)
	if err != nil {
		return ""
	}
	return rt.Destination(r.Broker)
}
