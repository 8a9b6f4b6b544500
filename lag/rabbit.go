package lag

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/rabbit"
)

// DefaultDialTimeout is the RabbitConfig.DialTimeout default.
const DefaultDialTimeout = 5 * time.Second

// RabbitConfig configures RabbitMQ depth measurement.
type RabbitConfig struct {
	// URL of the broker; default rabbit.DefaultURL when URLs is empty
	// too. The one-URL form of URLs: set one of them.
	URL string
	// URLs are the nodes of a cluster: the first that answers is measured
	// through, the next after a lost connection (rabbit.Dialer).
	URLs []string
	// TLS overrides the TLS settings derived from amqps:// URLs.
	TLS *tls.Config
	// DialTimeout bounds one connection attempt; default 5 s.
	DialTimeout time.Duration
	// Logger receives fail-over warnings; default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with the documented defaults filled in.
func (c RabbitConfig) WithDefaults() RabbitConfig {
	if c.URL == "" && len(c.URLs) == 0 {
		c.URL = rabbit.DefaultURL
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c RabbitConfig) Validate() error {
	if c.URL != "" && len(c.URLs) > 0 {
		return fmt.Errorf("%w: url and urls are both set (set one)", ErrInvalidConfig)
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("%w: dial timeout %s is negative", ErrInvalidConfig, c.DialTimeout)
	}
	return nil
}

// Rabbit measures RabbitMQ queue depth over one AMQP connection, opened on
// first use and reopened after a failure. It is safe for concurrent use.
type Rabbit struct {
	cfg    RabbitConfig
	dialer *rabbit.Dialer

	mu   sync.Mutex
	conn *amqp.Connection
}

// NewRabbit returns a measurer for cfg (validated, then defaults filled
// in). It does not connect.
func NewRabbit(cfg RabbitConfig) (*Rabbit, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	urls := cfg.URLs
	if len(urls) == 0 {
		urls = []string{cfg.URL}
	}
	d, err := rabbit.NewDialer(rabbit.DialerConfig{URLs: urls, TLS: cfg.TLS, Timeout: cfg.DialTimeout, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Rabbit{cfg: cfg, dialer: d}, nil
}

// QueueDepth is one queue's depth.
type QueueDepth struct {
	Queue string
	// Exists is false when the queue is not declared; the counts are then 0.
	Exists bool
	// Messages is the number of messages ready for delivery (messages
	// delivered but not acknowledged are not counted; see the package
	// documentation).
	Messages int
	// Consumers is the number of consumers.
	Consumers int
	// Role says what the queue is for, hence whether it should have a
	// consumer: group queues and DLQs should, delay and unroutable queues
	// never have one. Empty when the sampler was not told (SamplerConfig.
	// RabbitRoles).
	Role QueueRole
}

// QueueRole is what a RabbitMQ queue is for.
type QueueRole string

// Queue roles.
const (
	RoleGroup      QueueRole = "group"      // <topic>.<group>: its worker consumes it
	RoleDLQ        QueueRole = "dlq"        // <topic>.<group>.dlq: the keeper (redrive serve) consumes it
	RoleDelay      QueueRole = "delay"      // delay tiers or route levels: messages wait out a TTL, no consumer by design
	RoleUnroutable QueueRole = "unroutable" // parked messages wait for an operator, no consumer by design
)

// ExpectsConsumer reports whether a queue of role r should have a
// consumer (an unknown role is assumed to).
func (r QueueRole) ExpectsConsumer() bool { return r != RoleDelay && r != RoleUnroutable }

// Measure returns the depth of each queue, in order. A queue that does not
// exist reads Exists false. It fails (wrapping ErrUnavailable) when
// RabbitMQ cannot be reached or ctx ends.
func (r *Rabbit) Measure(ctx context.Context, queues ...string) ([]QueueDepth, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]QueueDepth, 0, len(queues))
	var ch *amqp.Channel
	defer func() {
		if ch != nil {
			_ = ch.Close()
		}
	}()
	for _, q := range queues {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("lag: rabbitmq depth of %s: %w", q, err)
		}
		if ch == nil {
			var err error
			if ch, err = r.channel(ctx); err != nil {
				return out, err
			}
		}
		info, err := ch.QueueDeclarePassive(q, false, false, false, false, nil)
		var aerr *amqp.Error
		switch {
		case err == nil:
			out = append(out, QueueDepth{Queue: q, Exists: true, Messages: info.Messages, Consumers: info.Consumers})
		case errors.As(err, &aerr) && aerr.Code == amqp.NotFound:
			// The server closed the channel; the next queue opens another.
			ch = nil
			out = append(out, QueueDepth{Queue: q})
		default:
			r.drop()
			ch = nil
			return out, fmt.Errorf("%w: rabbitmq depth of %s: %w", ErrUnavailable, q, err)
		}
	}
	return out, nil
}

// channel opens a channel, connecting first when needed.
func (r *Rabbit) channel(ctx context.Context) (*amqp.Channel, error) {
	if r.conn == nil || r.conn.IsClosed() {
		conn, err := r.dialer.Dial(ctx, "lag")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		r.conn = conn
	}
	ch, err := r.conn.Channel()
	if err != nil {
		r.drop()
		return nil, fmt.Errorf("%w: rabbitmq channel: %w", ErrUnavailable, err)
	}
	return ch, nil
}

func (r *Rabbit) drop() {
	if r.conn != nil {
		_ = r.conn.Close()
		r.conn = nil
	}
}

// Close closes the connection.
func (r *Rabbit) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close()
	r.conn = nil
	if err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("lag: close rabbitmq connection: %w", err)
	}
	return nil
}

// RabbitQueues lists the queues of a RabbitMQ deployment to measure: each
// group queue and its DLQ (pass rabbit.Queue(topic, group) for each
// worker), the queues delayed messages wait in (rabbit.DelayQueues: tiers
// in hops mode, levels in route mode) and the unroutable parking queue.
func RabbitQueues(n rabbit.Names, delayQueues []string, groupQueues ...string) []string {
	out := make([]string, 0, 2*len(groupQueues)+len(delayQueues)+1)
	for _, q := range groupQueues {
		out = append(out, q, rabbit.DLQ(q))
	}
	out = append(out, delayQueues...)
	return append(out, n.Unroutable())
}

// RabbitRoles gives the role of each queue RabbitQueues lists for the same
// arguments.
func RabbitRoles(n rabbit.Names, delayQueues []string, groupQueues ...string) map[string]QueueRole {
	out := make(map[string]QueueRole, 2*len(groupQueues)+len(delayQueues)+1)
	for _, q := range delayQueues {
		out[q] = RoleDelay
	}
	out[n.Unroutable()] = RoleUnroutable
	for _, q := range groupQueues {
		out[q], out[rabbit.DLQ(q)] = RoleGroup, RoleDLQ
	}
	return out
}
