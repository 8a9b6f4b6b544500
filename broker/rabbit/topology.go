package rabbit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

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

// queueArgs are the arguments of a queue of type typ (Classic or Quorum).
// A quorum queue has no delivery limit (subPlan sets a group queue's):
// on RabbitMQ 4 one of 20 applies unless declared otherwise, and a DLQ,
// the unroutable queue or a delay queue has nowhere to dead-letter what it
// would drop (the keeper's store failing 20 times would lose dead
// letters). forServer adapts it to RabbitMQ 3.
func queueArgs(typ string) amqp.Table {
	a := amqp.Table{"x-queue-type": typ}
	if typ == Quorum {
		a[argDeliveryLimit] = int64(NoDeliveryLimit)
	}
	return a
}

// argDeliveryLimit is a quorum queue's delivery limit argument.
const argDeliveryLimit = "x-delivery-limit"

// forServer adapts plan to the RabbitMQ version conn is connected to:
// before 4.0, x-delivery-limit -1 is a limit below every count (the first
// returned delivery is dead-lettered or dropped), and no limit is the
// argument's absence.
func forServer(plan []Declaration, conn *amqp.Connection) []Declaration {
	if serverMajor(conn) >= 4 {
		return plan
	}
	out := make([]Declaration, len(plan))
	for i, d := range plan {
		if n, ok := d.Args[argDeliveryLimit].(int64); ok && n < 0 {
			d.Args = maps.Clone(d.Args)
			delete(d.Args, argDeliveryLimit)
		}
		out[i] = d
	}
	return out
}

// serverMajor is the major version the server announced (0 when it
// announced none that parses).
func serverMajor(conn *amqp.Connection) int {
	v, _ := conn.Properties["version"].(string)
	major, _, _ := strings.Cut(v, ".")
	n, _ := strconv.Atoi(major)
	return n
}

// withDLX adds dead-lettering arguments. A quorum queue gets at-least-once
// dead-lettering, which needs x-overflow reject-publish: the broker keeps
// a dead letter until its target queue confirmed it, so a dead letter made
// by the broker (TTL, delivery limit) survives a node failure.
func withDLX(a amqp.Table, exchange, key string) amqp.Table {
	a["x-dead-letter-exchange"] = exchange
	if key != "" {
		a["x-dead-letter-routing-key"] = key
	}
	return withDLXStrategy(a)
}

// withDLXStrategy makes a quorum queue that dead-letters do it at least
// once.
func withDLXStrategy(a amqp.Table) amqp.Table {
	if _, dlx := a["x-dead-letter-exchange"]; dlx && a["x-queue-type"] == Quorum {
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
		{Kind: "queue", Name: n.Unroutable(), Args: queueArgs(b.cfg.QueueType)},
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
		args := withDLX(queueArgs(b.cfg.DelayQueueType), n.Retry(), "")
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
			args := withDLX(queueArgs(b.cfg.DelayQueueType), next(k), "")
			args["x-message-ttl"] = int64(d) * b.tiers.ms[k]
			q := n.RouteQueue(k, d)
			plan = append(plan,
				Declaration{Kind: "queue", Name: q, Args: args},
				Declaration{Kind: "binding", Name: q, Exchange: level, Key: prefix + strconv.Itoa(d) + ".#"})
		}
		plan = append(plan, Declaration{Kind: "exchange-binding", Name: next(k), Exchange: level, Key: prefix + "0.#"})
	}
	final := Declaration{Kind: "exchange", Name: n.RouteFinal(), Type: amqp.ExchangeTopic, Args: ae}
	plan = append([]Declaration{final}, plan...)
	// No alternate exchange: a delayed publish to a topic no subscription
	// bound is returned (ErrUnroutable), as a publish to redrive.topics is.
	return append(plan, Declaration{Kind: "exchange", Name: n.RouteTopics(), Type: amqp.ExchangeTopic})
}

func (b *Broker) subPlan(s broker.Subscription) []Declaration {
	n := b.names
	q := Queue(s.Topic, s.Group)
	args := withDLX(queueArgs(b.cfg.QueueType), n.DLX(), q)
	if s.MaxAge > 0 {
		args["x-message-ttl"] = s.MaxAge.Milliseconds()
	}
	if b.cfg.MaxLength > 0 {
		args["x-max-length"] = int64(b.cfg.MaxLength)
	}
	if b.cfg.QueueType == Quorum {
		// The broker's own poison-pill limit (x-death reason
		// delivery_limit), set explicitly: RabbitMQ 4 applies 20 to a
		// quorum queue declared without one, 3.x none. With MaxClaims it
		// stands behind redrive's (claims.go): redrive dead-letters a
		// message on its delivery MaxClaims+1; should that fail and the
		// message come back once more, the broker dead-letters it.
		args[argDeliveryLimit] = int64(b.cfg.DeliveryLimit)
		if s.MaxClaims > 0 {
			args[argDeliveryLimit] = int64(s.MaxClaims)
		}
	}
	plan := []Declaration{
		{Kind: "queue", Name: q, Args: args},
		{Kind: "binding", Name: q, Exchange: n.Topics(), Key: s.Topic},
		{Kind: "binding", Name: q, Exchange: n.Retry(), Key: q},
		{Kind: "queue", Name: DLQ(q), Args: queueArgs(b.cfg.QueueType)},
		{Kind: "binding", Name: DLQ(q), Exchange: n.DLX(), Key: q},
	}
	if b.cfg.Delay.Mode == DelayRoute {
		byTopic := b.tiers.routeBinding(routeTopic(s.Topic))
		plan = append(plan,
			Declaration{Kind: "binding", Name: q, Exchange: n.RouteFinal(), Key: b.tiers.routeBinding(q)},
			Declaration{Kind: "binding", Name: q, Exchange: n.RouteFinal(), Key: byTopic},
			Declaration{Kind: "exchange-binding", Name: n.RouteLevel(0), Exchange: n.RouteTopics(), Key: byTopic})
	}
	return plan
}

// Declare implements broker.Broker: it declares the shared topology and each
// subscription's queues, idempotently.
func (b *Broker) Declare(ctx context.Context, subs ...broker.Subscription) error {
	return b.declare(ctx, subs)
}

// declare validates subs with their defaults and applies their plan.
func (b *Broker) declare(ctx context.Context, subs []broker.Subscription) error {
	norm := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		norm[i] = s.WithDefaults()
		if err := norm[i].Validate(); err != nil {
			return err
		}
		if err := checkTopic(s.Topic); err != nil {
			return err
		}
	}
	return b.apply(ctx, b.Plan(norm...))
}

// apply declares plan on the broker. A declaration that clashes with an
// existing queue or exchange does not stop the others: apply returns every
// clash, one error (wrapping ErrTopologyConflict) per line.
func (b *Broker) apply(ctx context.Context, plan []Declaration) error {
	conn, err := b.dial(ctx, "topology")
	if err != nil {
		return err
	}
	defer conn.Close()
	plan = forServer(plan, conn)
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open topology channel: %w", err)
	}
	s := &topoChannel{conn: conn, ch: ch}
	var conflicts []error
	for _, d := range plan {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := declare(s.ch, d)
		if err == nil {
			continue
		}
		var refused *amqp.Error
		if !errors.As(err, &refused) || refused.Code != amqp.PreconditionFailed {
			return fmt.Errorf("rabbit: declare %s %q: %w", d.Kind, d.Name, err)
		}
		// The server closed the channel over the clash.
		if s.ch, err = conn.Channel(); err != nil {
			return fmt.Errorf("rabbit: reopen topology channel: %w", err)
		}
		if err := b.resolve(s, d, refused); err != nil {
			if !errors.Is(err, ErrTopologyConflict) {
				return err
			}
			conflicts = append(conflicts, err)
		}
	}
	return errors.Join(conflicts...)
}

// declare declares d on ch.
func declare(ch *amqp.Channel, d Declaration) error {
	switch d.Kind {
	case "exchange":
		return ch.ExchangeDeclare(d.Name, d.Type, true, false, false, false, d.Args)
	case "queue":
		_, err := ch.QueueDeclare(d.Name, true, false, false, false, d.Args)
		return err
	case "binding":
		return ch.QueueBind(d.Name, d.Key, d.Exchange, false, nil)
	case "exchange-binding":
		return ch.ExchangeBind(d.Name, d.Key, d.Exchange, false, nil)
	}
	return fmt.Errorf("rabbit: unknown declaration kind %q", d.Kind)
}

// Plan lists the declarations cfg and subs need without connecting: what
// `redrive topology apply --dry-run` prints.
func Plan(cfg Config, subs ...broker.Subscription) ([]Declaration, error) {
	b, err := planner(cfg)
	if err != nil {
		return nil, err
	}
	norm := make([]broker.Subscription, len(subs))
	for i, s := range subs {
		norm[i] = s.WithDefaults()
	}
	return b.Plan(norm...), nil
}

// Apply declares everything cfg and subs need, as `redrive topology apply`
// does: unlike New followed by Declare, it reports every clash with the
// existing topology at once, the shared queues' and the subscriptions'.
//
// Once everything is declared, what was declared is added to the prefix's
// topology record (see Unnamed).
func Apply(ctx context.Context, cfg Config, subs ...broker.Subscription) error {
	b, err := dialing(cfg)
	if err != nil {
		return err
	}
	if err := b.declare(ctx, subs); err != nil {
		return err
	}
	conn, err := b.dial(ctx, "topology-record")
	if err != nil {
		return err
	}
	defer conn.Close()
	return b.recordApplied(conn, forServer(b.Plan(normalized(subs)...), conn))
}

// planner is an unconnected Broker of cfg: enough to plan.
func planner(cfg Config) (*Broker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, _ := newTiers(cfg.Delay)
	return &Broker{cfg: cfg, names: Names{Prefix: cfg.Prefix}, tiers: t, log: cfg.Logger}, nil
}

// dialing is planner with a Dialer of cfg's URLs.
func dialing(cfg Config) (*Broker, error) {
	b, err := planner(cfg)
	if err != nil {
		return nil, err
	}
	b.dialer, err = NewDialer(DialerConfig{URLs: b.cfg.Endpoints(), TLS: b.cfg.TLS, Timeout: b.cfg.DialTimeout, Logger: b.log})
	return b, err
}

// DelayQueues returns the names of the queues in which cfg's delayed
// messages wait: the tier queues in hops mode, the level queues in route
// mode. They are what queue-depth monitoring measures besides the group
// queues, their DLQs and the unroutable queue.
func DelayQueues(cfg Config) ([]string, error) {
	b, err := planner(cfg)
	if err != nil {
		return nil, err
	}
	return b.delayQueues(), nil
}
