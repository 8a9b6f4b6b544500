package rabbit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// ErrTopologyConflict is wrapped when a declaration clashes with an existing
// exchange or queue (RabbitMQ's PRECONDITION_FAILED). It is not retried:
// an operator must migrate.
var ErrTopologyConflict = errors.New("rabbit: topology conflict")

// Declaration is one step of the topology: an exchange, a queue or a
// binding. Plan returns them for `redrive topology apply --dry-run`.
type Declaration struct {
	Kind     string // "exchange", "queue", "binding" or "exchange-binding"
	Name     string // exchange or queue name; the queue (or destination exchange) of bindings
	Type     string // exchange type
	Exchange string // bindings: the exchange bound from
	Key      string // bindings: the routing key
	Args     amqp.Table
}

// String renders d as one line of a plan.
func (d Declaration) String() string {
	switch d.Kind {
	case "exchange":
		return fmt.Sprintf("exchange %s (%s)%s", d.Name, d.Type, fmtArgs(d.Args))
	case "queue":
		return fmt.Sprintf("queue    %s%s", d.Name, fmtArgs(d.Args))
	case "exchange-binding":
		return fmt.Sprintf("binding  %s -> exchange %s key %q", d.Exchange, d.Name, d.Key)
	default:
		return fmt.Sprintf("binding  %s -> %s key %q", d.Exchange, d.Name, d.Key)
	}
}

func fmtArgs(a amqp.Table) string {
	if len(a) == 0 {
		return ""
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, a[k])
	}
	return " {" + strings.Join(parts, ", ") + "}"
}

// Plan lists every declaration the subscriptions need, in order: the shared
// exchanges and delay tiers, then each group queue with its bindings and
// dead-letter queue. It does not talk to the broker.
func (b *Broker) Plan(subs ...broker.Subscription) []Declaration {
	plan := b.basePlan()
	for _, s := range subs {
		plan = append(plan, b.subPlan(s)...)
	}
	return plan
}

func (b *Broker) queueArgs() amqp.Table {
	a := amqp.Table{"x-queue-type": b.cfg.QueueType}
	return a
}

// withDLX adds dead-lettering arguments; quorum queues get at-least-once
// dead-lettering, which needs x-overflow reject-publish.
func (b *Broker) withDLX(a amqp.Table, exchange, key string) amqp.Table {
	a["x-dead-letter-exchange"] = exchange
	if key != "" {
		a["x-dead-letter-routing-key"] = key
	}
	if b.cfg.QueueType == Quorum {
		a["x-dead-letter-strategy"] = "at-least-once"
		a["x-overflow"] = "reject-publish"
	}
	return a
}

func (b *Broker) basePlan() []Declaration {
	n := b.names
	ae := amqp.Table{"alternate-exchange": n.Unroutable()}
	plan := []Declaration{
		{Kind: "exchange", Name: n.Unroutable(), Type: amqp.ExchangeFanout},
		{Kind: "queue", Name: n.Unroutable(), Args: b.queueArgs()},
		{Kind: "binding", Name: n.Unroutable(), Exchange: n.Unroutable()},
		{Kind: "exchange", Name: n.Topics(), Type: amqp.ExchangeTopic},
		{Kind: "exchange", Name: n.Retry(), Type: amqp.ExchangeDirect, Args: ae},
		{Kind: "exchange", Name: n.DLX(), Type: amqp.ExchangeDirect, Args: ae},
	}
	if b.cfg.Delay.Mode == DelayRoute {
		return append(plan, b.routePlan(ae)...)
	}
	for _, ms := range b.tiers.ms {
		name := n.Tier(ms)
		args := b.withDLX(b.queueArgs(), n.Retry(), "")
		args["x-message-ttl"] = ms
		plan = append(plan,
			Declaration{Kind: "exchange", Name: name, Type: amqp.ExchangeFanout},
			Declaration{Kind: "queue", Name: name, Args: args},
			Declaration{Kind: "binding", Name: name, Exchange: name},
		)
	}
	return plan
}

// routePlan declares route mode's levels: per level a topic exchange, a
// queue per non-zero digit dead-lettering into the next level, and the
// digit-0 exchange-to-exchange binding; then the final exchange.
func (b *Broker) routePlan(ae amqp.Table) []Declaration {
	n := b.names
	next := func(k int) string {
		if k+1 == len(b.tiers.ms) {
			return n.RouteFinal()
		}
		return n.RouteLevel(k + 1)
	}
	var plan []Declaration
	for k := len(b.tiers.ms) - 1; k >= 0; k-- { // destinations before their sources
		level, prefix := n.RouteLevel(k), strings.Repeat("*.", k)
		plan = append(plan, Declaration{Kind: "exchange", Name: level, Type: amqp.ExchangeTopic, Args: ae})
		for d := 1; d < int(b.tiers.factor); d++ {
			args := b.withDLX(b.queueArgs(), next(k), "")
			args["x-message-ttl"] = int64(d) * b.tiers.ms[k]
			q := n.RouteQueue(k, d)
			plan = append(plan,
				Declaration{Kind: "queue", Name: q, Args: args},
				Declaration{Kind: "binding", Name: q, Exchange: level, Key: prefix + strconv.Itoa(d) + ".#"})
		}
		plan = append(plan, Declaration{Kind: "exchange-binding", Name: next(k), Exchange: level, Key: prefix + "0.#"})
	}
	final := Declaration{Kind: "exchange", Name: n.RouteFinal(), Type: amqp.ExchangeTopic, Args: ae}
	return append([]Declaration{final}, plan...)
}

func (b *Broker) subPlan(s broker.Subscription) []Declaration {
	n := b.names
	q := Queue(s.Topic, s.Group)
	args := b.withDLX(b.queueArgs(), n.DLX(), q)
	if s.MaxAge > 0 {
		args["x-message-ttl"] = s.MaxAge.Milliseconds()
	}
	if b.cfg.MaxLength > 0 {
		args["x-max-length"] = int64(b.cfg.MaxLength)
	}
	plan := []Declaration{
		{Kind: "queue", Name: q, Args: args},
		{Kind: "binding", Name: q, Exchange: n.Topics(), Key: s.Topic},
		{Kind: "binding", Name: q, Exchange: n.Retry(), Key: q},
		{Kind: "queue", Name: DLQ(q), Args: b.queueArgs()},
		{Kind: "binding", Name: DLQ(q), Exchange: n.DLX(), Key: q},
	}
	if b.cfg.Delay.Mode == DelayRoute {
		plan = append(plan, Declaration{Kind: "binding", Name: q, Exchange: n.RouteFinal(), Key: b.tiers.routeBinding(q)})
	}
	return plan
}

// Declare implements broker.Broker: it declares the shared topology and each
// subscription's queues, idempotently.
func (b *Broker) Declare(ctx context.Context, subs ...broker.Subscription) error {
	norm := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		norm[i] = s.WithDefaults()
		if err := norm[i].Validate(); err != nil {
			return err
		}
	}
	return b.apply(ctx, b.Plan(norm...))
}

// Apply declares plan on the broker.
func (b *Broker) apply(ctx context.Context, plan []Declaration) error {
	conn, err := b.dial(ctx, "topology")
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	defer ch.Close()
	for _, d := range plan {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch d.Kind {
		case "exchange":
			err = ch.ExchangeDeclare(d.Name, d.Type, true, false, false, false, d.Args)
		case "queue":
			_, err = ch.QueueDeclare(d.Name, true, false, false, false, d.Args)
		case "binding":
			err = ch.QueueBind(d.Name, d.Key, d.Exchange, false, nil)
		case "exchange-binding":
			err = ch.ExchangeBind(d.Name, d.Key, d.Exchange, false, nil)
		}
		if err != nil {
			return declareError(d, err)
		}
	}
	return nil
}

var inequivalent = regexp.MustCompile(`inequivalent arg '([^']+)' for (?:queue|exchange) '[^']*' in vhost '[^']*': received (?:the value )?'?([^' ]*)'?(?: of type '[^']*')? but current is (?:the value )?'?([^' ]*)'?`)

// declareError explains a failed declaration in one line; a clash with an
// existing queue names the argument, both values and how to migrate.
func declareError(d Declaration, err error) error {
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.PreconditionFailed {
		return fmt.Errorf("rabbit: declare %s %q: %w", d.Kind, d.Name, err)
	}
	if m := inequivalent.FindStringSubmatch(ae.Reason); m != nil {
		return fmt.Errorf("%w: %s %q exists with %s=%s but the config wants %s=%s; to migrate, drain and delete it (rabbitmqctl delete_%s %s) or restore the old setting, then run `redrive topology apply` again",
			ErrTopologyConflict, d.Kind, d.Name, m[1], m[3], m[1], m[2], d.Kind, d.Name)
	}
	return fmt.Errorf("%w: %s %q: %s", ErrTopologyConflict, d.Kind, d.Name, ae.Reason)
}

// Plan lists the declarations cfg and subs need without connecting: what
// `redrive topology apply --dry-run` prints.
func Plan(cfg Config, subs ...broker.Subscription) ([]Declaration, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, _ := newTiers(cfg.Delay)
	b := &Broker{cfg: cfg, names: Names{Prefix: cfg.Prefix}, tiers: t}
	norm := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		norm[i] = s.WithDefaults()
	}
	return b.Plan(norm...), nil
}

// DelayQueues returns the names of the queues in which cfg's delayed
// messages wait: the tier queues in hops mode, the level queues in route
// mode. They are what queue-depth monitoring measures besides the group
// queues, their DLQs and the unroutable queue.
func DelayQueues(cfg Config) ([]string, error) {
	plan, err := Plan(cfg)
	if err != nil {
		return nil, err
	}
	unroutable := Names{Prefix: cfg.WithDefaults().Prefix}.Unroutable()
	var out []string
	for _, d := range plan {
		if d.Kind == "queue" && d.Name != unroutable {
			out = append(out, d.Name)
		}
	}
	return out, nil
}
