package rabbit

import (
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// MaxNameLen is the longest exchange name, queue name and routing key
// RabbitMQ takes (an AMQP short string).
const MaxNameLen = 255

// CheckNames computes every declaration `topology apply` would make for
// cfg and subs (Plan, the names this package gives), without connecting,
// and reports, naming the setting to change (a Problem's Worker indexes
// subs, its Field is a worker's or cfg's in the configuration file's
// spelling):
//
//   - a name or routing key over MaxNameLen bytes (in route mode a group
//     queue's binding key is its name plus 2 bytes per delay level);
//   - a queue two workers would share, or a worker queue that is also a
//     shared one: worker "b" of topic "a.x" and worker "x.b" of topic "a"
//     both get the queue "a.x.b";
//   - a foreign dead-letter queue (foreignDLQs, the configuration's
//     foreign_dlqs) that is one of redrive's queues.
func CheckNames(cfg Config, subs []broker.Subscription, foreignDLQs []string) []driver.Problem {
	cfg = Config{Prefix: cfg.Prefix, QueueType: cfg.QueueType, MaxLength: cfg.MaxLength, Delay: cfg.Delay}
	base, err := Plan(cfg)
	if err != nil {
		return []driver.Problem{{Worker: -1, Msg: err.Error()}}
	}
	var out []driver.Problem
	add := func(worker int, field, format string, args ...any) {
		out = append(out, driver.Problem{Worker: worker, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	owners := map[string]string{} // queue → who declares it
	for _, d := range base {
		for _, l := range tooLong(d) {
			field := "prefix"
			if l.key {
				field = "delay.levels"
			}
			add(-1, field, "%s is %d bytes, over RabbitMQ's %d", l.what, l.n, MaxNameLen)
		}
		if d.Kind == "queue" {
			owners[d.Name] = "a queue of the shared topology (rabbitmq.prefix " + cfg.Prefix + ")"
		}
	}
	owners[Names{Prefix: cfg.Prefix}.Manifest()] = "the topology record of the prefix (rabbitmq.prefix " + cfg.Prefix + ")"
	for i, s := range subs {
		plan, err := Plan(cfg, s)
		if err != nil {
			add(i, "name", "%v", err)
			continue
		}
		q := Queue(s.Topic, s.Group)
		reported := map[string]bool{}
		for _, d := range plan[len(base):] {
			for _, l := range tooLong(d) {
				if reported[l.what] {
					continue
				}
				reported[l.what] = true
				hint := "shorten the topic or the name"
				if l.key && d.Key != s.Topic && d.Key != q {
					hint += ", or lower rabbitmq.delay.levels"
				}
				add(i, "name", "%s is %d bytes, over RabbitMQ's %d (%s)", l.what, l.n, MaxNameLen, hint)
			}
			if d.Kind != "queue" {
				continue
			}
			role := "group queue"
			if d.Name != q {
				role = "dead-letter queue"
			}
			if prev, dup := owners[d.Name]; dup {
				add(i, "name", "its %s %q is also %s: rename one of the workers", role, driver.ClipName(d.Name), prev)
				break // its other queues follow from this one
			}
			owners[d.Name] = fmt.Sprintf("the %s of workers[%d] (topic %q, name %q)", role, i, driver.ClipName(s.Topic), driver.ClipName(s.Group))
		}
	}
	for i, q := range foreignDLQs {
		if prev, ok := owners[q]; ok {
			add(-1, fmt.Sprintf("foreign_dlqs[%d].queue", i), "%q is %s: the keeper would take its messages (name another application's dead-letter queue)", driver.ClipName(q), prev)
		}
	}
	return out
}

// overLimit is a name or key over MaxNameLen.
type overLimit struct {
	what string // for the message
	n    int
	key  bool
}

// tooLong returns the names and key of d over MaxNameLen bytes.
func tooLong(d Declaration) []overLimit {
	var out []overLimit
	if len(d.Name) > MaxNameLen {
		out = append(out, overLimit{what: fmt.Sprintf("%s name %q", kindName(d.Kind), driver.ClipName(d.Name)), n: len(d.Name)})
	}
	if len(d.Key) > MaxNameLen {
		out = append(out, overLimit{what: fmt.Sprintf("the binding key %q of %s on %s", driver.ClipName(d.Key), driver.ClipName(d.Name), d.Exchange), n: len(d.Key), key: true})
	}
	return out
}

func kindName(kind string) string {
	if kind == "exchange" || kind == "exchange-binding" {
		return "exchange"
	}
	return "queue"
}
