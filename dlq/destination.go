package dlq

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
func Destination(brokerName, target, worker string) string {
	if target == "" {
		return ""
	}
	unit := "queue"
	if brokerName == BrokerKafka {
		unit = "topic"
	}
	if worker == "" {
		return unit + " " + target + " (every worker of it)"
	}
	return unit + " " + target + " (worker " + worker + ")"
}

// ReplayTargeter is a Republisher that says where Republish puts an
// entry: the queue or topic, and the worker that handles it there.
type ReplayTargeter interface {
	ReplayTarget(e Entry) (target, worker string)
}

// Destination is where a replay of r goes, as Destination names it: what
// the Republisher says (ReplayTargeter), else the entry's source queue and
// worker; "" when unknown.
func (o *Ops) Destination(r Record) string {
	if t, ok := o.pub.(ReplayTargeter); ok {
		if target, worker := t.ReplayTarget(r.Entry); target != "" {
			return Destination(r.Broker, target, worker)
		}
	}
	return Destination(r.Broker, r.Entry.Source, r.Entry.Worker)
}
