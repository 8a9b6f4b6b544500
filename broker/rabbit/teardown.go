package rabbit

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// Teardown is Broker.Teardown without a connected Broker: for cleaning up
// after a Broker was closed.
func Teardown(ctx context.Context, cfg Config, subs ...broker.Subscription) ([]Removed, error) {
	b, err := dialing(cfg)
	if err != nil {
		return nil, err
	}
	return b.Teardown(ctx, subs...)
}

// Removed is an exchange or queue Teardown deleted.
type Removed struct {
	Kind, Name string
	// Messages is how many messages a deleted queue held.
	Messages int
}

// Teardown deletes every exchange and queue that Declare declares for subs
// (the shared ones of b's prefix included, and its topology record), with
// the messages the queues hold, and returns what it deleted. What does not exist is skipped. It is
// for environments that own their prefix and topics, such as `redrive dev`
// and tests: other applications using the same prefix lose their shared
// exchanges and delay queues.
func (b *Broker) Teardown(ctx context.Context, subs ...broker.Subscription) ([]Removed, error) {
	norm := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		norm[i] = s.WithDefaults()
	}
	plan := b.Plan(norm...)
	conn, err := b.dial(ctx, "teardown")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// The prefix's topology record (`redrive topology apply`) goes too.
	plan = append(plan, Declaration{Kind: "queue", Name: b.names.Manifest()})
	var out []Removed
	for _, kind := range []string{"queue", "exchange"} { // queues first: nothing routes into a deleted exchange's queues meanwhile
		for _, d := range plan {
			if d.Kind != kind {
				continue
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			r, deleted, err := remove(conn, d)
			if err != nil {
				return out, err
			}
			if deleted {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// remove deletes the queue or exchange d on a channel of its own and
// reports whether it existed.
func remove(conn *amqp.Connection, d Declaration) (Removed, bool, error) {
	ch, err := conn.Channel()
	if err != nil {
		return Removed{}, false, fmt.Errorf("rabbit: open teardown channel: %w", err)
	}
	defer ch.Close()
	r := Removed{Kind: d.Kind, Name: d.Name}
	if d.Kind == "queue" {
		_, err = ch.QueueDeclarePassive(d.Name, true, false, false, false, nil)
	} else {
		err = ch.ExchangeDeclarePassive(d.Name, d.Type, true, false, false, false, nil)
	}
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("rabbit: look up %s %q: %w", d.Kind, d.Name, err)
	}
	if d.Kind == "queue" {
		r.Messages, err = ch.QueueDelete(d.Name, false, false, false)
	} else {
		err = ch.ExchangeDelete(d.Name, false, false)
	}
	if err != nil {
		return r, false, fmt.Errorf("rabbit: delete %s %q: %w", d.Kind, d.Name, err)
	}
	return r, true, nil
}
