package rabbit

import (
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
)

// MaxNameLen is the longest exchange name, queue name and routing key
// RabbitMQ takes (an AMQP short string).
const MaxNameLen = 255

func init() { backend.RegisterChecker(broker.RabbitMQ, checkNames) }

// checkNames computes every declaration `topology apply` would make for a
// valid configuration (Plan, the names this package gives) and reports,
// naming the field to change:
//
//   - a name or routing key over MaxNameLen bytes (in route mode a group
//     queue's binding key is its name plus 2 bytes per delay level);
//   - a queue two workers would share, or a worker queue that is also a
//     shared one: worker "b" of topic "a.x" and worker "x.b" of topic "a"
//     both get the queue "a.x.b";
//   - a foreign dead-letter queue (rabbitmq.foreign_dlqs) that is one of
//     redrive's queues.
func checkNames(c *config.Config) []*config.FieldError {
	r := c.RabbitMQ
	cfg := Config{Prefix: r.Prefix, QueueType: r.QueueType, MaxLength: r.MaxLength, Delay: delayFrom(r.Delay)}
	base, err := Plan(cfg)
	if err != nil {
		return []*config.FieldError{{Path: "rabbitmq", Msg: err.Error()}}
	}
	var out []*config.FieldError
	add := func(path, format string, args ...any) {
		out = append(out, &config.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	owners := map[string]string{} // queue → who declares it
	for _, d := range base {
		for _, l := range tooLong(d) {
			path := "rabbitmq.prefix"
			if l.key {
				path = "rabbitmq.delay.levels"
			}
			add(path, "%s is %d bytes, over RabbitMQ's %d", l.what, l.n, MaxNameLen)
		}
		if d.Kind == "queue" {
			owners[d.Name] = "a queue of the shared topology (rabbitmq.prefix " + r.Prefix + ")"
		}
	}
	owners[Names{Prefix: r.Prefix}.Manifest()] = "the topology record of the prefix (rabbitmq.prefix " + r.Prefix + ")"
	for i, s := range c.Subscriptions() {
		path := fmt.Sprintf("workers[%d].name", i)
		plan, err := Plan(cfg, s)
		if err != nil {
			add(path, "%v", err)
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
				add(path, "%s is %d bytes, over RabbitMQ's %d (%s)", l.what, l.n, MaxNameLen, hint)
			}
			if d.Kind != "queue" {
				continue
			}
			role := "group queue"
			if d.Name != q {
				role = "dead-letter queue"
			}
			if prev, dup := owners[d.Name]; dup {
				add(path, "its %s %q is also %s: rename one of the workers", role, backend.Clip(d.Name), prev)
				break // its other queues follow from this one
			}
			owners[d.Name] = fmt.Sprintf("the %s of workers[%d] (topic %q, name %q)", role, i, backend.Clip(s.Topic), backend.Clip(s.Group))
		}
	}
	for i, f := range r.ForeignDLQs {
		if prev, ok := owners[f.Queue]; ok {
			add(fmt.Sprintf("rabbitmq.foreign_dlqs[%d].queue", i), "%q is %s: the keeper would take its messages (name another application's dead-letter queue)", backend.Clip(f.Queue), prev)
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
		out = append(out, overLimit{what: fmt.Sprintf("%s name %q", kindName(d.Kind), backend.Clip(d.Name)), n: len(d.Name)})
	}
	if len(d.Key) > MaxNameLen {
		out = append(out, overLimit{what: fmt.Sprintf("the binding key %q of %s on %s", backend.Clip(d.Key), backend.Clip(d.Name), d.Exchange), n: len(d.Key), key: true})
	}
	return out
}

func kindName(kind string) string {
	if kind == "exchange" || kind == "exchange-binding" {
		return "exchange"
	}
	return "queue"
}
