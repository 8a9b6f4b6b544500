package dlq

import "github.com/redrive/redrive/broker"

// Destination names where a replay goes, for people, the one way the
// console, the CLI, the admin API and the audit log show it: the queue
// (RabbitMQ) or topic (Kafka) the replay is published to, and the worker
// that handles it there:
//
//	queue escrow.commands.payout-executor (worker payout-executor)
//	topic escrow.commands.retry.payout-executor (worker payout-executor)
//
// With no worker (a topic every worker of reads) it says so. An empty
// target is "".
func Destination(brokerName broker.Backend, target, worker string) string {
	if target == "" {
		return ""
	}
	unit := "queue"
	if brokerName == broker.Kafka {
		unit = "topic"
	}
	if worker == "" {
		return unit + " " + target + " (every worker of it)"
	}
	return unit + " " + target + " (worker " + worker + ")"
}

// Destination is where a replay of r goes, as Destination names it: the
// target and worker of its route (Target), from the configuration; ""
// when it cannot be replayed (Target's error says why).
func (o *Ops) Destination(r Record) string {
	rt, err := o.Target(r)
	if err != nil {
		return ""
	}
	return Destination(r.Broker, rt.Target, rt.Worker)
}
