package rabbit

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrTopologyConflict is wrapped when a declaration clashes with an existing
// exchange or queue (RabbitMQ's PRECONDITION_FAILED). It is not retried:
// an operator must migrate.
var ErrTopologyConflict = errors.New("rabbit: topology conflict")

// inequivalent parses RabbitMQ's reason for a clash of arguments: the
// argument, the value declared and the current one ("none" when absent).
// RabbitMQ names only the first argument that differs.
var inequivalent = regexp.MustCompile(`inequivalent arg '([^']+)' for (?:queue|exchange) '[^']*' in vhost '[^']*': received (?:the value )?'?([^' ]*)'?(?: of type '[^']*')? but current is (?:the value )?'?([^' ]*)'?`)

// topoChannel is a channel that is reopened after the server closed it over a
// failed declaration.
type topoChannel struct {
	conn *amqp.Connection
	ch   *amqp.Channel
}

// clash declares queue name with args and returns the clash RabbitMQ
// reports (nil when declared), or another error. When the clash is about
// x-delivery-limit only, the queue's own limit is adopted (kept reports
// it): that limit is the broker's backstop behind redrive's max_claims, and
// changing max_claims must not force a queue migration.
func (s *topoChannel) clash(name string, args amqp.Table) (clash *amqp.Error, kept string, err error) {
	for attempt := 0; ; attempt++ {
		_, err := s.ch.QueueDeclare(name, true, false, false, false, args)
		if err == nil {
			return nil, kept, nil
		}
		if !errors.As(err, &clash) || clash.Code != amqp.PreconditionFailed {
			return nil, "", fmt.Errorf("rabbit: declare queue %q: %w", name, err)
		}
		if s.ch, err = s.conn.Channel(); err != nil {
			return nil, "", fmt.Errorf("rabbit: reopen topology channel: %w", err)
		}
		m := inequivalent.FindStringSubmatch(clash.Reason)
		if m == nil || m[1] != "x-delivery-limit" || attempt > 0 {
			return clash, "", nil
		}
		args, kept = maps.Clone(args), m[3]
		if n, err := strconv.ParseInt(m[3], 10, 64); err == nil {
			args["x-delivery-limit"] = n
		} else {
			delete(args, "x-delivery-limit")
		}
	}
}

// resolve handles a declaration d that RabbitMQ refused with
// PRECONDITION_FAILED: it keeps a quorum queue whose only difference is
// its delivery limit (with a warning), and otherwise returns one line
// that names the argument, both values, the messages the queue holds and
// what to do. A queue of the other type (classic instead of quorum, or
// back) is recognised by declaring it as the other type would have it.
func (b *Broker) resolve(s *topoChannel, d Declaration, refused *amqp.Error) error {
	if d.Kind != "queue" {
		if m := inequivalent.FindStringSubmatch(refused.Reason); m != nil {
			return fmt.Errorf("%w: exchange %q exists with %s=%s but the config wants %s=%s; delete it or restore the old setting, then run `redrive topology apply` again",
				ErrTopologyConflict, d.Name, m[1], m[3], m[1], m[2])
		}
		return fmt.Errorf("%w: %s %q: %s", ErrTopologyConflict, d.Kind, d.Name, refused.Reason)
	}
	clash, kept, err := s.clash(d.Name, d.Args)
	if err != nil {
		return err
	}
	if clash == nil {
		b.log.Warn("rabbit: queue keeps its delivery limit: max_claims is still enforced by redrive; the broker's limit differs from the configuration (max_claims, rabbitmq.delivery_limit) until the queue is migrated",
			"queue", d.Name, "x-delivery-limit", kept, "wanted", d.Args["x-delivery-limit"])
		return nil
	}
	held := ""
	if q, err := s.ch.QueueDeclarePassive(d.Name, true, false, false, false, nil); err == nil {
		held = fmt.Sprintf(" (%d messages ready, %d consumers)", q.Messages, q.Consumers)
	} else if s.ch, err = s.conn.Channel(); err != nil {
		return fmt.Errorf("rabbit: reopen topology channel: %w", err)
	}
	want, _ := d.Args["x-queue-type"].(string)
	other := otherType(d.Args)
	if typeClash, _, err := s.clash(d.Name, other); err != nil {
		return err
	} else if typeClash == nil {
		have := other["x-queue-type"]
		field := "rabbitmq.queue_type"
		if slices.Contains(b.delayQueues(), d.Name) {
			field = "rabbitmq.delay.queue_type"
		}
		return fmt.Errorf("%w: queue %q is %s%s but %s is %s; a queue's type cannot change in place: migrate it (docs/production.md, \"From classic to quorum queues\") or set %s back to %s",
			ErrTopologyConflict, d.Name, have, held, field, want, field, have)
	}
	m := inequivalent.FindStringSubmatch(clash.Reason)
	if m == nil {
		return fmt.Errorf("%w: queue %q%s: %s", ErrTopologyConflict, d.Name, held, clash.Reason)
	}
	exists := fmt.Sprintf("exists with %s=%s", m[1], m[3])
	if m[3] == "none" {
		exists = "exists without " + m[1]
	}
	return fmt.Errorf("%w: queue %q%s %s but the config wants %s=%s; drain it (let its workers empty it), delete it (rabbitmqctl delete_queue %s) and run `redrive topology apply` again, or restore the old setting",
		ErrTopologyConflict, d.Name, held, exists, m[1], m[2], d.Name)
}

// otherType returns queue arguments a as the other queue type would have
// them: quorum queues that dead-letter do it at least once with
// reject-publish and may have a delivery limit; classic ones have neither.
func otherType(a amqp.Table) amqp.Table {
	alt := maps.Clone(a)
	if a["x-queue-type"] == Quorum {
		alt["x-queue-type"] = Classic
		for _, k := range []string{"x-dead-letter-strategy", "x-overflow", "x-delivery-limit"} {
			delete(alt, k)
		}
		return alt
	}
	alt["x-queue-type"] = Quorum
	return withDLXStrategy(alt)
}

// delayQueues are the names of the queues delayed messages wait in.
func (b *Broker) delayQueues() []string {
	var out []string
	for _, d := range b.basePlan() {
		if d.Kind == "queue" && d.Name != b.names.Unroutable() {
			out = append(out, d.Name)
		}
	}
	return out
}
