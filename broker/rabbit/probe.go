package rabbit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
)

// ErrNotConsuming is returned by ConsumerReady for a topic and group no
// Consume call of this Broker runs, or whose session is not consuming
// (connecting, or reconnecting after a lost connection).
var ErrNotConsuming = driver.NewError("rabbit: not consuming", driver.ErrNotConsuming)

// LagCacheTTL is how long ConsumerLag reuses a queue's ready count: the
// instances of one process (one Broker) share one passive declare per
// queue per second, however many ask.
const LagCacheTTL = time.Second

// probe holds what ConsumerLag and ConsumerReady need: the cached ready
// counts with the measurements in flight, a connection of its own for
// passive declares (opened on first use, reopened after a failure), and
// the consumers of every queue.
type probe struct {
	mu     sync.Mutex
	cache  map[string]readyCount
	flight map[string]chan struct{} // queue -> closed when its measurement is done

	connMu sync.Mutex // one passive declare at a time on conn, ch
	conn   *amqp.Connection
	ch     *amqp.Channel

	cmu       sync.Mutex
	consumers map[string][]*atomic.Int64 // queue -> each Consume's session consuming now (0: none)
}

type readyCount struct {
	n   int
	at  time.Time
	err error
}

// ConsumerLag returns the messages ready in the group queue of topic and
// group (<topic>.<group>): waiting for a consumer, not counting those
// delivered and not yet acknowledged (up to each consumer's prefetch),
// which AMQP does not report. One passive declare per queue and
// LagCacheTTL, shared by every caller of this Broker; a caller whose ctx
// ends first gets ctx's error while the declare completes for the next.
func (b *Broker) ConsumerLag(ctx context.Context, topic, group string) (int64, error) {
	q := Queue(topic, group)
	p := &b.probe
	p.mu.Lock()
	if c, ok := p.cache[q]; ok && time.Since(c.at) < LagCacheTTL {
		p.mu.Unlock()
		return int64(c.n), c.err
	}
	done, busy := p.flight[q]
	if !busy {
		done = make(chan struct{})
		if p.flight == nil {
			p.flight, p.cache = make(map[string]chan struct{}), make(map[string]readyCount)
		}
		p.flight[q] = done
		go func() {
			n, err := b.ready(q)
			p.mu.Lock()
			p.cache[q] = readyCount{n: n, at: time.Now(), err: err}
			delete(p.flight, q)
			p.mu.Unlock()
			close(done)
		}()
	}
	p.mu.Unlock()
	select {
	case <-done:
		p.mu.Lock()
		c := p.cache[q]
		p.mu.Unlock()
		return int64(c.n), c.err
	case <-ctx.Done():
		return 0, fmt.Errorf("rabbit: ready messages of %s: %w", q, ctx.Err())
	}
}

// ready declares q passively on the probe's channel. Dialing is bounded
// by Config.DialTimeout, the declare by the connection's heartbeats.
func (b *Broker) ready(q string) (int, error) {
	p := &b.probe
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.ch == nil || p.ch.IsClosed() {
		if p.conn == nil || p.conn.IsClosed() {
			conn, err := b.dial(context.Background(), "monitor")
			if err != nil {
				return 0, err
			}
			p.conn = conn
		}
		ch, err := p.conn.Channel()
		if err != nil {
			_ = p.conn.Close()
			p.conn = nil
			return 0, fmt.Errorf("rabbit: open monitor channel: %w", err)
		}
		p.ch = ch
	}
	info, err := p.ch.QueueDeclarePassive(q, false, false, false, false, nil)
	if err != nil {
		p.ch = nil // the server closes the channel on any error
		return 0, fmt.Errorf("rabbit: ready messages of %s: %w", q, err)
	}
	return info.Messages, nil
}

// ConsumerReady returns nil when a Consume call of topic and group runs
// in this process and every such call holds an open channel consuming its
// group queue; else why not. It does no I/O: a lost connection ends the
// session at once (amqp091 notices the closed socket or the missing
// heartbeats), and the session is not consuming until it reconnected.
func (b *Broker) ConsumerReady(_ context.Context, topic, group string) error {
	q := Queue(topic, group)
	p := &b.probe
	p.cmu.Lock()
	defer p.cmu.Unlock()
	cs := p.consumers[q]
	if len(cs) == 0 {
		return fmt.Errorf("%w: %s", ErrNotConsuming, q)
	}
	for _, c := range cs {
		if c.Load() == 0 {
			return fmt.Errorf("%w: %s: no open session (connecting or reconnecting)", ErrNotConsuming, q)
		}
	}
	return nil
}

// track registers a Consume call of queue whose consuming session is
// consuming (0: none), until the returned function is called.
func (p *probe) track(queue string, consuming *atomic.Int64) (untrack func()) {
	p.cmu.Lock()
	if p.consumers == nil {
		p.consumers = make(map[string][]*atomic.Int64)
	}
	p.consumers[queue] = append(p.consumers[queue], consuming)
	p.cmu.Unlock()
	return func() {
		p.cmu.Lock()
		defer p.cmu.Unlock()
		cs := p.consumers[queue]
		for i, c := range cs {
			if c == consuming {
				p.consumers[queue] = append(cs[:i:i], cs[i+1:]...)
				break
			}
		}
		if len(p.consumers[queue]) == 0 {
			delete(p.consumers, queue)
		}
	}
}

// close closes the probe's connection.
func (p *probe) close() {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn, p.ch = nil, nil
	}
}
