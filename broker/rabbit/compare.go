package rabbit

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// Presence is how one declaration of a plan stands on the server.
type Presence string

// Presences of a Checked declaration.
const (
	// Present: the exchange or queue exists with the settings the plan
	// gives it; applying changes nothing.
	Present Presence = "keep"
	// Missing: it does not exist; applying creates it.
	Missing Presence = "create"
	// Conflicting: it exists with other settings (type or arguments);
	// applying fails on it until an operator migrates it.
	Conflicting Presence = "conflict"
	// Unchecked: a binding between existing ends. AMQP cannot tell
	// whether a binding exists without the management API; applying binds
	// again, which is idempotent.
	Unchecked Presence = "bind"
)

// Checked is a declaration of a plan with how it stands on the server.
type Checked struct {
	Declaration
	Presence Presence
	// Messages and Consumers are what an existing queue holds and serves.
	Messages, Consumers int
	// Err explains a conflict in one line (it wraps ErrTopologyConflict).
	Err error
}

// String renders c as one line of a dry run: the presence, then the
// declaration, then the conflict or the messages an existing queue holds.
func (c Checked) String() string {
	s := fmt.Sprintf("%-8s %s", c.Presence, c.Declaration)
	switch {
	case c.Err != nil:
		s += ": " + c.Err.Error()
	case c.Presence == Present && c.Kind == "queue":
		s += fmt.Sprintf(" [%d messages, %d consumers]", c.Messages, c.Consumers)
	}
	return s
}

// Check compares the declarations cfg and subs need with what exists on
// the server, without changing anything: what `redrive topology apply
// --dry-run` prints. Every conflict is reported (Checked.Err), not only
// the first. It connects but declares nothing: each exchange and queue is
// looked up with a passive declaration, and one that exists is declared
// again with the planned settings, which RabbitMQ accepts without a change
// when they are equivalent and refuses otherwise. (Should another client
// delete it between the two steps, that second declaration creates it.)
func Check(ctx context.Context, cfg Config, subs ...broker.Subscription) ([]Checked, error) {
	b, err := dialing(cfg)
	if err != nil {
		return nil, err
	}
	return b.Check(ctx, subs...)
}

// Check is the package-level Check with b's configuration.
func (b *Broker) Check(ctx context.Context, subs ...broker.Subscription) ([]Checked, error) {
	norm := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		norm[i] = s.WithDefaults()
	}
	return b.check(ctx, b.Plan(norm...))
}

// Conflicts returns the errors of the conflicting declarations of checked,
// joined (nil when there are none).
func Conflicts(checked []Checked) error {
	var errs []error
	for _, c := range checked {
		if c.Err != nil {
			errs = append(errs, c.Err)
		}
	}
	return errors.Join(errs...)
}

func (b *Broker) check(ctx context.Context, plan []Declaration) ([]Checked, error) {
	conn, err := b.dial(ctx, "topology-check")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	plan = forServer(plan, conn)
	out := make([]Checked, 0, len(plan))
	exists := make(map[string]bool) // "queue x" / "exchange x" -> exists (or will, being declared by this plan)
	for _, d := range plan {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c := Checked{Declaration: d}
		switch d.Kind {
		case "exchange", "queue":
			if err := b.checkOne(conn, &c); err != nil {
				return nil, err
			}
			exists[d.Kind+" "+d.Name] = c.Presence != Missing
		default: // a binding: new when either end is
			c.Presence = Unchecked
			to := "queue "
			if d.Kind == "exchange-binding" {
				to = "exchange "
			}
			if !exists["exchange "+d.Exchange] || !exists[to+d.Name] {
				c.Presence = Missing
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// checkOne looks up the exchange or queue of c on channels of its own: the
// server closes a channel on a failed declaration.
func (b *Broker) checkOne(conn *amqp.Connection, c *Checked) error {
	d := c.Declaration
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	if d.Kind == "queue" {
		var q amqp.Queue
		if q, err = ch.QueueDeclarePassive(d.Name, true, false, false, false, nil); err == nil {
			c.Messages, c.Consumers = q.Messages, q.Consumers
		}
	} else {
		err = ch.ExchangeDeclarePassive(d.Name, d.Type, true, false, false, false, nil)
	}
	if err != nil {
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.NotFound {
			c.Presence = Missing
			return nil
		}
		return fmt.Errorf("rabbit: look up %s %q: %w", d.Kind, d.Name, err)
	}
	s := &topoChannel{conn: conn, ch: ch}
	defer func() { _ = s.ch.Close() }()
	// It exists: declared again as planned, RabbitMQ accepts it unchanged
	// or refuses it (closing the channel). A refusal is explained as apply
	// explains it (resolve, which declares nothing new: the queue exists).
	err = declare(s.ch, d)
	if err == nil {
		c.Presence = Present
		return nil
	}
	var refused *amqp.Error
	if !errors.As(err, &refused) || refused.Code != amqp.PreconditionFailed {
		return fmt.Errorf("rabbit: compare %s %q: %w", d.Kind, d.Name, err)
	}
	if s.ch, err = conn.Channel(); err != nil {
		return fmt.Errorf("rabbit: reopen topology channel: %w", err)
	}
	switch err := b.resolve(s, d, refused); {
	case err == nil: // kept as it is (a quorum queue's delivery limit)
		c.Presence = Present
	case errors.Is(err, ErrTopologyConflict):
		c.Presence, c.Err = Conflicting, err
	default:
		return err
	}
	return nil
}
