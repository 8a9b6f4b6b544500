package rabbit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// ErrRemoveRefused is wrapped by Remove's error when it left an object in
// place because messages wait in it, something consumes it or is bound to
// it: RemoveRequest.Force deletes those too.
var ErrRemoveRefused = driver.NewError("rabbit: removal refused", driver.ErrRemoveRefused)

// RemoveRequest says whose objects Remove deletes.
type RemoveRequest struct {
	// Remove are the subscriptions whose queues, bindings and exchanges go.
	Remove []broker.Subscription
	// Keep are the subscriptions that stay: nothing their plan declares is
	// removed, so the shared exchanges and delay queues stay while one
	// remains, as does a binding another group of the same topic needs.
	// Empty: the shared objects of the prefix go too.
	Keep []broker.Subscription
	// Force deletes queues that hold messages (they are lost) or have
	// consumers, and exchanges something else is still bound to.
	Force bool
	// DryRun looks everything up and changes nothing.
	DryRun bool
	// Unnamed removes too what the prefix's topology record (see
	// Unnamed) holds and Keep's plan does not name: retired workers',
	// old delay settings', and those of other configurations sharing
	// the prefix.
	Unnamed bool
}

// RemovalAction is what Remove did, or would do, to one object.
type RemovalAction string

// Removal actions.
const (
	ActionDelete  RemovalAction = "delete"  // a dry run would delete (or unbind) it
	ActionDeleted RemovalAction = "deleted" // deleted (or unbound)
	ActionRefused RemovalAction = "refused" // left in place: Removal.Reason says why
	ActionAbsent  RemovalAction = "absent"  // it does not exist
)

// Removal is one object of Remove's plan and what became of it.
type Removal struct {
	// Declaration is the queue, exchange or exchange-to-exchange binding.
	// Queue bindings go with their queue.
	Declaration
	// Shared: part of the prefix's shared topology, not of one group.
	Shared bool
	Action RemovalAction
	// Messages and Consumers are what a queue held when looked up (and
	// Messages what a deleted queue held when deleted).
	Messages, Consumers int
	// Reason explains a refusal.
	Reason string
}

// String renders r as one line of `redrive topology delete`: the action,
// then Describe.
func (r Removal) String() string {
	return fmt.Sprintf("%-8s %s", r.Action, r.Describe())
}

// Describe names the object with what it holds and why it was refused.
func (r Removal) Describe() string {
	what := r.Kind + " " + r.Name
	if r.Kind == "exchange-binding" {
		what = fmt.Sprintf("binding %s -> exchange %s key %q", r.Exchange, r.Name, r.Key)
	}
	if r.Shared {
		what += " (shared)"
	}
	s := what
	if r.Kind == "queue" && r.Action != ActionAbsent {
		s += fmt.Sprintf(" [%d messages, %d consumers]", r.Messages, r.Consumers)
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// Remove deletes the queues and exchanges req.Remove's subscriptions
// declare and req.Keep's do not: `redrive topology delete`. Queues go
// first (their bindings with them), then the exchange-to-exchange
// bindings, then exchanges, each only if unused by anything else. A queue
// holding messages or consumed is refused, as is an exchange something
// is still bound to (another application sharing the prefix), unless
// req.Force; then nothing is deleted (every object is looked up before
// the first deletion) and Remove returns the removals with an error
// wrapping ErrRemoveRefused. What does not exist is reported absent.
func Remove(ctx context.Context, cfg Config, req RemoveRequest) ([]Removal, error) {
	b, err := dialing(cfg)
	if err != nil {
		return nil, err
	}
	cands := b.removals(req)
	conn, err := b.dial(ctx, "topology-remove")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if req.Unnamed {
		more, err := b.unnamed(conn, req.Keep)
		if err != nil {
			return nil, err
		}
		for _, r := range more {
			if !slices.ContainsFunc(cands, func(c Removal) bool { return objectOf(c.Declaration) == objectOf(r.Declaration) }) {
				cands = append(cands, r)
			}
		}
	}
	// Everything is looked up first: while one queue is refused, nothing
	// is deleted (no worker is left half removed).
	look := req
	look.DryRun = true
	refused, err := b.removeAll(ctx, conn, cands, look)
	if err == nil && refused == 0 && !req.DryRun {
		refused, err = b.removeAll(ctx, conn, cands, req)
		if rerr := b.recordRemoved(conn, cands, len(req.Keep) == 0 && refused == 0); err == nil && rerr != nil {
			err = rerr
		}
	}
	if err != nil {
		return cands, err
	}
	if refused > 0 {
		return cands, fmt.Errorf("%w: %d objects left in place (messages wait, consumers or bindings remain; --force deletes them)", ErrRemoveRefused, refused)
	}
	return cands, nil
}

// removeAll removes cands in order (queues, then exchange-to-exchange
// bindings, then exchanges) and counts the refusals.
func (b *Broker) removeAll(ctx context.Context, conn *amqp.Connection, cands []Removal, req RemoveRequest) (refused int, err error) {
	for _, kind := range []string{"queue", "exchange-binding", "exchange"} {
		for i := range cands {
			r := &cands[i]
			if r.Kind != kind || r.Action == ActionAbsent {
				continue
			}
			if err := ctx.Err(); err != nil {
				return refused, err
			}
			r.Reason = ""
			if err := b.removeOne(conn, r, req); err != nil {
				return refused, err
			}
			if r.Action == ActionRefused {
				refused++
			}
		}
	}
	return refused, nil
}

// removals lists what req removes: the queues, exchanges and
// exchange-to-exchange bindings of req.Remove's plan that req.Keep's plan
// does not declare, each once, in plan order.
func (b *Broker) removals(req RemoveRequest) []Removal {
	key := func(d Declaration) string { return d.Kind + "\x00" + d.Name + "\x00" + d.Exchange + "\x00" + d.Key }
	kept := map[string]bool{}
	if len(req.Keep) > 0 {
		for _, d := range b.Plan(normalized(req.Keep)...) {
			kept[key(d)] = true
		}
	}
	shared := map[string]bool{}
	for _, d := range b.basePlan() {
		shared[key(d)] = true
	}
	var out []Removal
	for _, d := range b.Plan(normalized(req.Remove)...) {
		if d.Kind == "binding" || kept[key(d)] {
			continue
		}
		kept[key(d)] = true // once
		out = append(out, Removal{Declaration: d, Shared: shared[key(d)]})
	}
	return out
}

func normalized(subs []broker.Subscription) []broker.Subscription {
	out := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		out[i] = s.WithDefaults()
	}
	return out
}

// removeOne looks r up and deletes it unless refused or a dry run, on a
// channel of its own (the server closes a channel on a refusal).
func (b *Broker) removeOne(conn *amqp.Connection, r *Removal, req RemoveRequest) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	defer func() { _ = ch.Close() }()
	switch r.Kind {
	case "queue":
		q, err := ch.QueueDeclarePassive(r.Name, true, false, false, false, nil)
		if absent(err) {
			r.Action = ActionAbsent
			return nil
		}
		if err != nil {
			return fmt.Errorf("rabbit: look up queue %q: %w", r.Name, err)
		}
		r.Messages, r.Consumers = q.Messages, q.Consumers
		if !req.Force && (q.Messages > 0 || q.Consumers > 0) {
			r.Action, r.Reason = ActionRefused, "messages wait or something consumes it (stop its workers and the keeper of `redrive serve`, drain it, or --force)"
			return nil
		}
	case "exchange", "exchange-binding":
		for _, x := range []string{r.Name, r.Exchange} {
			if x == "" {
				continue
			}
			if err := ch.ExchangeDeclarePassive(x, amqp.ExchangeTopic, true, false, false, false, nil); absent(err) {
				r.Action = ActionAbsent
				return nil
			} else if err != nil {
				return fmt.Errorf("rabbit: look up exchange %q: %w", x, err)
			}
		}
	}
	if req.DryRun {
		r.Action = ActionDelete
		return nil
	}
	switch r.Kind {
	case "queue":
		r.Messages, err = ch.QueueDelete(r.Name, false, !req.Force, false)
	case "exchange-binding":
		err = ch.ExchangeUnbind(r.Name, r.Key, r.Exchange, false, nil)
	default:
		err = ch.ExchangeDelete(r.Name, !req.Force, false)
	}
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.PreconditionFailed {
		r.Action, r.Reason = ActionRefused, "in use: "+ae.Reason+" (--force deletes it)"
		return nil
	}
	if err != nil {
		return fmt.Errorf("rabbit: delete %s %q: %w", r.Kind, r.Name, err)
	}
	r.Action = ActionDeleted
	b.log.Info("rabbit: topology removed", "kind", r.Kind, "name", r.Name, "messages", r.Messages, "forced", req.Force)
	return nil
}

// absent reports whether err is the server's NOT_FOUND.
func absent(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == amqp.NotFound
}
