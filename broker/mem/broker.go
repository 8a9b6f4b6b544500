package mem

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// BrokerConfig configures a Broker of a Server.
type BrokerConfig struct {
	// Instance is the identity of the process the broker stands for,
	// which its deliveries and dead letters carry; empty:
	// driver.DefaultInstance().
	Instance string
	// Logger receives the pipeline's log lines (one per retry and dead
	// letter); nil: slog.Default().
	Logger *slog.Logger
}

// Validate returns nil: every BrokerConfig is valid. It is here so that
// every configuration of redrive validates alike.
func (c BrokerConfig) Validate() error { return nil }

// Broker is a connection to a Server: a broker.Broker, with the
// capabilities of the built-in backends (driver.Pauser, driver.Prober,
// driver.Instancer, driver.BatchSource, driver.Republisher). Its methods
// are safe for concurrent use.
type Broker struct {
	srv      *Server
	instance string
	log      *slog.Logger
	holds    driver.Holds

	mu        sync.Mutex
	closed    bool
	consuming map[string]int // topic\x00group → running Consume calls
}

var (
	_ broker.Broker       = (*Broker)(nil)
	_ driver.Pauser       = (*Broker)(nil)
	_ driver.Prober       = (*Broker)(nil)
	_ driver.Instancer    = (*Broker)(nil)
	_ driver.BatchSource  = (*Broker)(nil)
	_ driver.Republisher  = (*Broker)(nil)
	_ driver.HeaderReader = headerReader(nil)
)

// Broker returns a new connection to s with the default BrokerConfig.
func (s *Server) Broker() *Broker { return s.Connect(BrokerConfig{}) }

// Connect returns a new connection to s.
func (s *Server) Connect(cfg BrokerConfig) *Broker {
	if cfg.Instance == "" {
		cfg.Instance = driver.DefaultInstance()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Broker{srv: s, instance: cfg.Instance, log: cfg.Logger, consuming: map[string]int{}}
}

// Server returns the server b is connected to.
func (b *Broker) Server() *Server { return b.srv }

// InstanceID implements driver.Instancer.
func (b *Broker) InstanceID() string { return b.instance }

func (b *Broker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Publish implements broker.Broker: msgs are in the queue of every worker
// of topic when it returns (a message without an ID gets one, without a
// Timestamp the server's time). It fails with ErrQueueFull, publishing
// none of msgs, when a queue would hold more than its bound.
func (b *Broker) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	return b.PublishDelayed(ctx, topic, 0, msgs...)
}

// PublishDelayed implements broker.Broker: msgs are delivered once delay
// passed on the server's clock, never earlier.
func (b *Broker) PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...broker.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mem: publish to %s: %w", topic, err)
	}
	if b.isClosed() {
		return fmt.Errorf("mem: publish to %s: %w", topic, ErrClosed)
	}
	s := b.srv
	stored := make([]*message, len(msgs))
	now := s.now()
	for i, m := range msgs {
		if m.ID == "" {
			m.ID = broker.NewMessageID()
		}
		if m.Timestamp.IsZero() {
			m.Timestamp = now
		}
		stored[i] = &message{id: m.ID, key: clone(m.Key), value: clone(m.Value), headers: maps.Clone(m.Headers),
			topic: topic, timestamp: m.Timestamp}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enqueue(topic, max(delay, 0), stored); err != nil {
		return fmt.Errorf("mem: publish to %s: %w", topic, err)
	}
	return nil
}

// clone copies p, keeping nil nil.
func clone(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, len(p)), p...)
}

// check validates sub for the in-memory broker.
func check(sub broker.Subscription) error {
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("mem: %w", err)
	}
	if sub.RetryMode == broker.Share {
		return fmt.Errorf("mem: %w: retry mode share is Kafka's (share groups); use blocking or non_blocking",
			broker.ErrInvalidSubscription)
	}
	return nil
}

// Declare implements broker.Broker: it creates each subscription's queue,
// so that what is published to its topic is kept for it from now on.
func (b *Broker) Declare(ctx context.Context, subs ...broker.Subscription) error {
	if b.isClosed() {
		return fmt.Errorf("mem: declare: %w", ErrClosed)
	}
	for _, sub := range subs {
		if err := check(sub); err != nil {
			return err
		}
	}
	s := b.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range subs {
		if _, err := s.declare(sub.WithDefaults()); err != nil {
			return err
		}
	}
	return nil
}

// Close implements broker.Broker: later calls fail with ErrClosed. The
// server and its messages stay.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// PauseConsume implements driver.Pauser: this broker's consumers of
// topic/group take no message until ResumeConsume; those in a handler
// finish.
func (b *Broker) PauseConsume(topic, group string) { b.holds.Of(topic, group).Set(true) }

// ResumeConsume implements driver.Pauser.
func (b *Broker) ResumeConsume(topic, group string) { b.holds.Of(topic, group).Set(false) }

// ConsumerLag implements driver.Prober: the messages in the queue of
// topic/group, due or delayed.
func (b *Broker) ConsumerLag(_ context.Context, topic, group string) (int64, error) {
	st := b.srv.Stats(topic, group)
	return int64(st.Due + st.Delayed), nil
}

// ConsumerReady implements driver.Prober: nil while a Consume of this
// broker consumes topic/group.
func (b *Broker) ConsumerReady(_ context.Context, topic, group string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.consuming[topic+"\x00"+group] == 0 {
		return fmt.Errorf("mem: %s/%s: %w", topic, group, driver.ErrNotConsuming)
	}
	return nil
}

// headerReader reads a message's stored headers (HeadersOnDemand).
type headerReader map[string]string

func (h headerReader) Header(key string) (string, bool) { v, ok := h[key]; return v, ok }

func (h headerReader) Range(f func(key, value string) bool) {
	for k, v := range h {
		if !f(k, v) {
			return
		}
	}
}
