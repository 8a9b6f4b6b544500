package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Broker is the RabbitMQ implementation of broker.Broker.
type Broker struct {
	cfg    Config
	names  Names
	tiers  tiers
	log    *slog.Logger
	dialer *Dialer
	pub    *publisher
	probe  probe
	holds  driver.Holds // PauseConsume

	baseOnce sync.Mutex
	baseDone bool
	closed   atomic.Bool
}

var _ broker.Broker = (*Broker)(nil)

// New validates cfg, connects to the broker and declares the shared
// topology (exchanges, delay tiers, the unroutable queue). An unreachable
// broker is an error naming each URL tried, with its password masked.
func New(ctx context.Context, cfg Config) (*Broker, error) {
	b, err := dialing(cfg)
	if err != nil {
		return nil, err
	}
	b.pub = &publisher{b: b}
	if _, _, err := b.pub.session(ctx); err != nil {
		return nil, err
	}
	if err := b.ensureBase(ctx); err != nil {
		_ = b.pub.close()
		return nil, err
	}
	return b, nil
}

// Names returns the names this broker uses on the wire.
func (b *Broker) Names() Names { return b.names }

// MaxDelay is the longest delay the tiers express within their accuracy
// bound: resolution × (factor^levels − 1).
func (b *Broker) MaxDelay() time.Duration { return b.tiers.max() }

// TierPasses reports how many delay tiers a message waiting d passes
// through.
func (b *Broker) TierPasses(d time.Duration) int { return b.tiers.passes(d) }

// dial opens a connection named for its role, to the first node that
// answers.
func (b *Broker) dial(ctx context.Context, role string) (*amqp.Connection, error) {
	if b.closed.Load() {
		return nil, broker.ErrClosed
	}
	return b.dialer.Dial(ctx, role)
}

func (b *Broker) ensureBase(ctx context.Context) error {
	b.baseOnce.Lock()
	defer b.baseOnce.Unlock()
	if b.baseDone {
		return nil
	}
	if err := b.apply(ctx, b.basePlan()); err != nil {
		return err
	}
	b.baseDone = true
	return nil
}

// Publish implements broker.Broker.
func (b *Broker) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	return b.publishTopic(ctx, topic, 0, msgs)
}

// PublishDelayed implements broker.Broker. The message reaches every group
// queue of the topic at once, carrying its delay in x-remaining-delay; each
// group's consumer moves it through the delay tiers before handling it, so
// it is never handled early.
func (b *Broker) PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...broker.Message) error {
	return b.publishTopic(ctx, topic, delay, msgs)
}

func (b *Broker) publishTopic(ctx context.Context, topic string, delay time.Duration, msgs []broker.Message) error {
	if b.closed.Load() {
		return broker.ErrClosed
	}
	if topic == "" {
		return errors.New("rabbit: publish: topic is empty")
	}
	if len(msgs) == 0 {
		return nil
	}
	out := make([]outgoing, len(msgs))
	now := time.Now()
	for i, m := range msgs {
		if size := len(m.Value) + len(m.Key) + headersSize(m.Headers); size > b.cfg.MaxMessageSize {
			return fmt.Errorf("rabbit: publish to %q: message %d is %d bytes, over the %d-byte limit: %w",
				topic, i+1, size, b.cfg.MaxMessageSize, broker.ErrTooLarge)
		}
		h := toTable(m.Headers)
		h[driver.HeaderTopic] = topic
		if m.Key != nil {
			h[driver.HeaderKey] = string(m.Key)
		}
		ex, key, expire := b.names.Topics(), topic, ""
		if delay > 0 {
			ex, key, expire = b.delayRoute(h, topic, delay)
		}
		id := m.ID
		if id == "" {
			id = broker.NewMessageID()
		}
		ts := m.Timestamp
		if ts.IsZero() {
			ts = now
		}
		out[i] = outgoing{exchange: ex, key: key, msg: amqp.Publishing{
			Headers:      h,
			DeliveryMode: amqp.Persistent,
			MessageId:    id,
			Timestamp:    ts,
			Expiration:   expire,
			Body:         m.Value,
		}}
	}
	err := b.pub.publish(ctx, out...)
	var re *returnedError
	if delay > 0 && b.cfg.Delay.Mode == DelayRoute && errors.As(err, &re) {
		return b.viaGroups(ctx, topic, delay, re.out)
	}
	return err
}

// delayRoute is where a message published to topic with delay goes first,
// its delay headers set in h. Route mode: the route, through RouteTopics,
// keyed by the topic (see route.go), so no consumer moves it before it is
// due; what exceeds the route's range is left in x-remaining-delay for
// the group's consumer. Hops mode: every group queue of the topic at once, with the
// whole delay in x-remaining-delay; each group's consumer moves it through
// the tiers. expire is the message's expiration property on the route
// (route.expire), "" in hops mode.
func (b *Broker) delayRoute(h amqp.Table, topic string, delay time.Duration) (exchange, key, expire string) {
	if b.cfg.Delay.Mode != DelayRoute {
		h[broker.HeaderRemainingDelay] = ceilMS(delay)
		return b.names.Topics(), topic, ""
	}
	r := b.tiers.routeKey(delay, routeTopic(topic))
	if r.leftMS > 0 {
		h[broker.HeaderRemainingDelay] = r.leftMS
	}
	h[HeaderTierPasses] = int64(r.stored)
	return b.names.RouteTopics(), r.key, r.expire
}

// viaGroups sends again, the hops-mode way, the delayed messages the route
// returned: their topic is not bound to the route (no subscription, or one
// declared by a redrive before route-keyed delayed publishes), and the
// groups' consumers move them through the delay. A topic no group consumes
// is returned again: ErrUnroutable.
func (b *Broker) viaGroups(ctx context.Context, topic string, delay time.Duration, returned []outgoing) error {
	again := make([]outgoing, len(returned))
	for i, o := range returned {
		o.msg.Headers[broker.HeaderRemainingDelay] = ceilMS(delay)
		delete(o.msg.Headers, HeaderTierPasses)
		o.msg.Expiration = "" // the route's: it would expire in a group queue
		again[i] = outgoing{exchange: b.names.Topics(), key: topic, msg: o.msg}
	}
	return b.pub.publish(ctx, again...)
}

func headersSize(h map[string]string) int {
	n := 0
	for k, v := range h {
		n += len(k) + len(v) + 6
	}
	return n
}

func ceilMS(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// Close closes the publishing connection. Consume calls must have returned.
func (b *Broker) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.probe.close()
	return b.pub.close()
}

// InstanceID returns the worker instance recorded on the dead letters this
// broker makes (Config.InstanceID).
func (b *Broker) InstanceID() string { return b.cfg.InstanceID }
