package rabbit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// DefaultDepthDialTimeout is the DepthConfig.DialTimeout default.
const DefaultDepthDialTimeout = 5 * time.Second

// DepthConfig configures a DepthMonitor.
type DepthConfig struct {
	// URL of the broker; default DefaultURL when URLs is empty too. The
	// one-URL form of URLs: set one of them.
	URL string
	// URLs are the nodes of a cluster: the first that answers is measured
	// through, the next after a lost connection (Dialer).
	URLs []string
	// TLS overrides the TLS settings derived from amqps:// URLs.
	TLS *tls.Config
	// DialTimeout bounds one connection attempt; default 5 s.
	DialTimeout time.Duration
	// Logger receives fail-over warnings; default slog.Default().
	Logger *slog.Logger
	// Queues are what MeasureDepth measures, in order, each with what it
	// is for. Default none (Measure takes its queues as arguments).
	Queues []MeasuredQueue
}

// MeasuredQueue is a queue a DepthMonitor measures and what it is for:
// the Role, Topic and Group of its depths.
type MeasuredQueue struct {
	Name  string
	Role  driver.QueueRole
	Topic string
	Group string
}

// WithDefaults returns c with the documented defaults filled in.
func (c DepthConfig) WithDefaults() DepthConfig {
	if c.URL == "" && len(c.URLs) == 0 {
		c.URL = DefaultURL
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDepthDialTimeout
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c DepthConfig) Validate() error {
	if c.URL != "" && len(c.URLs) > 0 {
		return fmt.Errorf("%w: url and urls are both set (set one)", ErrInvalidConfig)
	}
	if c.DialTimeout < 0 {
		return fmt.Errorf("%w: dial timeout %s is negative", ErrInvalidConfig, c.DialTimeout)
	}
	return nil
}

// DepthMonitor measures queue depth over one AMQP connection, opened on
// first use and reopened after a failure: it declares each queue
// passively, which returns the number of messages ready for delivery and
// the number of consumers. Messages delivered but not yet acknowledged
// are not counted: AMQP does not report them and the management API,
// which does, may not be enabled; a queue whose consumers hold many
// unacknowledged messages (up to their prefetch) reads lower than its
// true backlog. A queue that does not exist is reported as missing, not
// as an error. It is safe for concurrent use; as the descriptor's Monitor
// (a driver.DepthMonitor) it measures Queues of the workers' topology.
type DepthMonitor struct {
	cfg    DepthConfig
	dialer *Dialer
	queues []string // the names of cfg.Queues

	mu   sync.Mutex
	conn *amqp.Connection
}

// NewDepthMonitor returns a monitor for cfg (validated, then defaults
// filled in). It does not connect.
func NewDepthMonitor(cfg DepthConfig) (*DepthMonitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	urls := cfg.URLs
	if len(urls) == 0 {
		urls = []string{cfg.URL}
	}
	d, err := NewDialer(DialerConfig{URLs: urls, TLS: cfg.TLS, Timeout: cfg.DialTimeout, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	m := &DepthMonitor{cfg: cfg, dialer: d, queues: make([]string, len(cfg.Queues))}
	for i, q := range cfg.Queues {
		m.queues[i] = q.Name
	}
	return m, nil
}

// Measure returns the depth of each queue, in order. A queue that does not
// exist reads Exists false. It fails (wrapping driver.ErrUnavailable) when
// RabbitMQ cannot be reached or ctx ends.
func (r *DepthMonitor) Measure(ctx context.Context, queues ...string) ([]driver.QueueDepth, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]driver.QueueDepth, 0, len(queues))
	var ch *amqp.Channel
	defer func() {
		if ch != nil {
			_ = ch.Close()
		}
	}()
	for _, q := range queues {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("rabbit: depth of %s: %w", q, err)
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
			out = append(out, driver.QueueDepth{Queue: q, Exists: true, Messages: info.Messages, Consumers: info.Consumers})
		case errors.As(err, &aerr) && aerr.Code == amqp.NotFound:
			// The server closed the channel; the next queue opens another.
			ch = nil
			out = append(out, driver.QueueDepth{Queue: q})
		default:
			r.drop()
			ch = nil
			return out, fmt.Errorf("%w: rabbitmq depth of %s: %w", driver.ErrUnavailable, q, err)
		}
	}
	return out, nil
}

// channel opens a channel, connecting first when needed.
func (r *DepthMonitor) channel(ctx context.Context) (*amqp.Channel, error) {
	if r.conn == nil || r.conn.IsClosed() {
		conn, err := r.dialer.Dial(ctx, "lag")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", driver.ErrUnavailable, err)
		}
		r.conn = conn
	}
	ch, err := r.conn.Channel()
	if err != nil {
		r.drop()
		return nil, fmt.Errorf("%w: rabbitmq channel: %w", driver.ErrUnavailable, err)
	}
	return ch, nil
}

func (r *DepthMonitor) drop() {
	if r.conn != nil {
		_ = r.conn.Close()
		r.conn = nil
	}
}

// Close closes the connection.
func (r *DepthMonitor) Close() error {
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

// MeasureDepth measures DepthConfig.Queues, each with its role and
// worker: the driver.DepthMonitor of this backend. It fails (wrapping
// driver.ErrUnavailable) when RabbitMQ cannot be reached or ctx ends.
func (r *DepthMonitor) MeasureDepth(ctx context.Context) ([]driver.QueueDepth, error) {
	depths, err := r.Measure(ctx, r.queues...)
	for i := range depths {
		q := r.cfg.Queues[i]
		depths[i].Role, depths[i].Topic, depths[i].Group = q.Role, q.Topic, q.Group
	}
	return depths, err
}

// monitor is the descriptor's Monitor: a DepthMonitor of every queue of
// the workers' topology (Queues), each with its role.
func monitor(_ context.Context, s driver.Settings, subs []broker.Subscription) (driver.Monitor, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	delay, err := DelayQueues(cfg)
	if err != nil {
		return nil, err
	}
	n := Names{Prefix: cfg.WithDefaults().Prefix}
	return NewDepthMonitor(DepthConfig{URL: cfg.URL, URLs: cfg.URLs, TLS: cfg.TLS, Logger: cfg.Logger, Queues: WorkerQueues(n, delay, subs)})
}

// WorkerQueues lists, with their roles, the queues of the workers'
// topology to measure: each group queue (Queue) and its DLQ, the queues
// delayed messages wait in (DelayQueues: tiers in hops mode, levels in
// route mode) and the unroutable parking queue.
func WorkerQueues(n Names, delayQueues []string, subs []broker.Subscription) []MeasuredQueue {
	out := make([]MeasuredQueue, 0, 2*len(subs)+len(delayQueues)+1)
	for _, w := range subs {
		q := Queue(w.Topic, w.Group)
		out = append(out, MeasuredQueue{Name: q, Role: driver.RoleGroup, Topic: w.Topic, Group: w.Group},
			MeasuredQueue{Name: DLQ(q), Role: driver.RoleDLQ, Topic: w.Topic, Group: w.Group})
	}
	for _, q := range delayQueues {
		out = append(out, MeasuredQueue{Name: q, Role: driver.RoleDelay})
	}
	return append(out, MeasuredQueue{Name: n.Unroutable(), Role: driver.RoleUnroutable})
}
