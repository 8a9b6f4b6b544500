package mem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Consume implements broker.Broker: sub.Concurrency handlers take the
// messages of sub's queue (shared with every other consumer of the same
// topic and group, on any Broker of the server) until ctx ends; then it
// takes no more, lets the handlers finish within sub.ShutdownTimeout,
// hands back what they did not (redelivered later) and returns nil.
//
// Each delivery runs through the driver's pipeline, whose decision is
// executed at once: a retry waits in the queue for its back-off, on the
// server's clock, and comes back to this worker only; a dead letter goes
// to the worker's DLQ (DLQName) with its story; Requeue hands it back
// with the same attempt. In blocking retry mode a message with a key is
// handled only once the earlier messages of its key were acknowledged or
// dead-lettered, its retries included (order per key, as a Kafka
// partition keeps it); in non_blocking mode, and for messages without a
// key, nothing waits. Share mode is refused (it is Kafka's).
//
// A consumer holds at most sub.Concurrency messages, those in its
// handlers: nothing is prefetched (Subscription.Prefetch has nothing to
// bound).
//
// Poison-pill claims (Subscription.MaxClaims) count with
// Subscription.Claims when set, else with the server's own count of the
// message's deliveries.
func (b *Broker) Consume(ctx context.Context, sub broker.Subscription, h broker.Handler) error {
	c, err := b.consumer(sub, h)
	if err != nil {
		return err
	}
	return c.run(ctx)
}

// Start is Consume in a goroutine of its own: its consumer counts for
// Server.Idle from when Start returns (a Consume started with go counts
// only once it runs). wait returns Consume's error once ctx ended and it
// returned.
func (b *Broker) Start(ctx context.Context, sub broker.Subscription, h broker.Handler) (wait func() error) {
	c, err := b.consumer(sub, h)
	if err != nil {
		return func() error { return err }
	}
	done := make(chan error, 1)
	go func() { done <- c.run(ctx) }()
	var once sync.Once
	return func() error {
		once.Do(func() { err = <-done })
		return err
	}
}

// consumer is one Consume call.
type consumer struct {
	b    *Broker
	sub  broker.Subscription
	h    broker.Handler
	q    *queue
	p    *driver.Pipeline
	hold *driver.Hold
	key  string
	mine map[*item]struct{} // items in this consumer's handlers; guarded by the server's mutex
}

// consumer declares sub's queue and counts a consumer of it, for Idle.
func (b *Broker) consumer(sub broker.Subscription, h broker.Handler) (*consumer, error) {
	if h == nil {
		return nil, fmt.Errorf("mem: consume %s/%s: %w: nil handler", sub.Topic, sub.Group, broker.ErrInvalidSubscription)
	}
	if err := check(sub); err != nil {
		return nil, err
	}
	if b.isClosed() {
		return nil, fmt.Errorf("mem: consume %s/%s: %w", sub.Topic, sub.Group, ErrClosed)
	}
	sub = sub.WithDefaults()
	s := b.srv
	s.mu.Lock()
	q, err := s.declare(sub)
	if err == nil {
		q.consumers++
		q.consumed = true
		s.bump()
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p := driver.NewPipeline(sub, b.log)
	p.SetClock(s.now)
	p.WarnUncountedClaims(true) // the server counts deliveries
	c := &consumer{b: b, sub: sub, h: h, q: q, p: p, hold: b.holds.Of(sub.Topic, sub.Group),
		key: sub.Topic + "\x00" + sub.Group, mine: map[*item]struct{}{}}
	b.mu.Lock()
	b.consuming[c.key]++
	b.mu.Unlock()
	return c, nil
}

// run consumes until ctx ends, then shuts down.
func (c *consumer) run(ctx context.Context) error {
	s := c.b.srv
	defer func() {
		c.b.mu.Lock()
		c.b.consuming[c.key]--
		c.b.mu.Unlock()
		s.mu.Lock()
		c.q.consumers--
		s.bump()
		s.mu.Unlock()
	}()
	// Handlers run on until the shutdown timeout after ctx ends.
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var wg sync.WaitGroup
	for range c.sub.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it := c.next(ctx)
				if it == nil {
					return
				}
				c.handle(hctx, it)
			}
		}()
	}
	<-ctx.Done()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	timer := time.NewTimer(c.sub.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-finished:
		return nil
	case <-timer.C:
	}
	// Past the shutdown timeout: hand back what the handlers still hold;
	// their decisions are dropped when they return.
	cancel()
	s.mu.Lock()
	for it := range c.mine {
		it.abandoned = true
		c.q.replace(it, &item{msg: it.msg, due: s.now(), seq: it.seq, front: true, deliveries: it.deliveries, redelivered: true}, s.now())
	}
	clear(c.mine)
	s.bump()
	s.mu.Unlock()
	c.b.log.Warn("handlers still running after the shutdown timeout; their messages are handed back",
		"topic", c.sub.Topic, "group", c.sub.Group, "shutdown_timeout", c.sub.ShutdownTimeout)
	return nil
}

// next waits for a message this consumer may take (not while its hold is
// on) and takes it; nil once ctx ended.
func (c *consumer) next(ctx context.Context) *item {
	s := c.b.srv
	for {
		on, holdChanged := c.hold.State()
		if on {
			select {
			case <-ctx.Done():
				return nil
			case <-holdChanged:
			}
			continue
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			s.mu.Unlock()
			return nil
		}
		c.q.promote(s.now())
		if it := c.q.take(); it != nil {
			c.mine[it] = struct{}{}
			s.mu.Unlock()
			return it
		}
		wake := c.q.wake
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-holdChanged:
		}
	}
}

// handle runs one delivery through the pipeline and executes its
// decision.
func (c *consumer) handle(ctx context.Context, it *item) {
	s := c.b.srv
	m := it.msg
	// base is the delivery as it arrived: the copies' story is built from
	// it, whatever the handler does to its own.
	base := broker.Delivery{
		Message: broker.Message{ID: m.id, Key: m.key, Value: m.value, Headers: m.headers, Timestamp: m.timestamp},
		Topic:   m.topic, Group: c.sub.Group, Instance: c.b.instance, Source: c.q.name,
		Partition: -1, Offset: -1, Redelivered: it.redelivered,
	}
	driver.ReadStory(&base)
	d := new(broker.Delivery)
	*d = base
	d.Key, d.Value = clone(m.key), clone(m.value)
	if c.sub.HeadersOnDemand {
		d.Headers = nil
		driver.SetHeaderReader(d, headerReader(m.headers))
	} else {
		d.Headers = make(map[string]string, len(m.headers))
		for k, v := range m.headers {
			d.Headers[k] = v
		}
	}
	in := driver.Input{Born: it.due, NativeClaims: it.deliveries}
	if c.p.Counts() {
		in.ClaimKey = driver.ClaimKey(c.sub.Group, m.id, strconv.Itoa(base.Attempt))
	}
	dec := c.p.Process(ctx, d, c.h, in)

	s.mu.Lock()
	if it.abandoned { // handed back at the shutdown timeout
		s.mu.Unlock()
		return
	}
	delete(c.mine, it)
	now := s.now()
	switch dec.Action {
	case driver.ActionAck:
		c.q.done(it)
	case driver.ActionRetry:
		s.seq++
		cp := &message{id: m.id, key: m.key, value: m.value, topic: m.topic, timestamp: m.timestamp,
			headers: driver.FailureHeaders(&base, dec.Outcome, dec.At)}
		c.q.replace(it, &item{msg: cp, due: now.Add(dec.Outcome.Delay), seq: s.seq, front: c.q.blocking}, now)
		s.schedule()
	case driver.ActionDeadLetter:
		s.seq++
		cp := &message{id: m.id, key: m.key, value: m.value, topic: m.topic, timestamp: m.timestamp,
			headers: driver.FailureHeaders(&base, dec.Outcome, dec.At)}
		dq := s.dlq(DLQName(c.sub.Topic, c.sub.Group))
		dq.push(&item{msg: cp, due: now, seq: s.seq,
			dead: &deadInfo{identity: s.id + "-" + strconv.FormatUint(s.seq, 10), stack: stackOf(dec.Cause)}}, now)
		dq.signal()
		c.q.done(it)
	case driver.ActionRequeue:
		c.q.replace(it, &item{msg: m, due: now, seq: it.seq, front: c.q.blocking, deliveries: it.deliveries}, now)
	default: // ActionStop: back to the queue, unacknowledged
		c.q.replace(it, &item{msg: m, due: now, seq: it.seq, front: true, deliveries: it.deliveries, redelivered: true}, now)
	}
	s.bump()
	s.mu.Unlock()
	c.p.Release(ctx, dec)
}

// MaxStackTrace is how many bytes of a handler panic's stack a dead
// letter keeps (Entry.StackTrace).
const MaxStackTrace = 500

// stackOf is the stack of a handler panic, cut to MaxStackTrace bytes;
// "" for another failure.
func stackOf(err error) string {
	var pe *driver.PanicError
	if !errors.As(err, &pe) {
		return ""
	}
	st := pe.Stack
	if len(st) > MaxStackTrace {
		st = st[:MaxStackTrace]
	}
	return string(st)
}
