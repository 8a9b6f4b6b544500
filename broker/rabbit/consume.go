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
	"github.com/redrive/redrive/broker/wire"
)

// reconnect back-off bounds for Consume.
const (
	minReconnect = 100 * time.Millisecond
	maxReconnect = 30 * time.Second
)

// Consume implements broker.Broker. It declares the subscription's queues,
// consumes with manual acks and sub.Concurrency handler goroutines, and
// reconnects with back-off when the connection is lost (unacknowledged
// messages are then redelivered by the broker). A topology conflict or an
// invalid subscription ends it with an error.
func (b *Broker) Consume(ctx context.Context, sub broker.Subscription, h broker.Handler) error {
	sub = sub.WithDefaults()
	if err := sub.Validate(); err != nil {
		return err
	}
	if err := checkTopic(sub.Topic); err != nil {
		return err
	}
	if sub.RetryMode == broker.Share {
		return fmt.Errorf("%w: retry mode share is Kafka's (share groups); RabbitMQ retries never block", broker.ErrInvalidSubscription)
	}
	if h == nil {
		return fmt.Errorf("%w: handler is nil", broker.ErrInvalidSubscription)
	}
	c := &consumer{b: b, sub: sub, h: h, queue: Queue(sub.Topic, sub.Group), instance: b.cfg.InstanceID,
		log: b.log.With("queue", Queue(sub.Topic, sub.Group))}
	c.pipe = driver.NewPipeline(sub, c.log.With("broker", Name))
	defer b.probe.track(c.queue, &c.consuming)()
	c.pipe.WarnUncountedClaims(b.cfg.QueueType == Quorum)
	wait := minReconnect
	for {
		started := time.Now()
		err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrTopologyConflict) || errors.Is(err, broker.ErrClosed) {
			return err
		}
		if time.Since(started) > maxReconnect {
			wait = minReconnect
		}
		c.log.Warn("rabbit: consumer session ended; reconnecting", "error", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, maxReconnect)
	}
}

type consumer struct {
	b   *Broker
	sub broker.Subscription
	h   broker.Handler
	// pipe runs each delivery (claims, the handler, the retry decision).
	pipe  *driver.Pipeline
	queue string
	// instance names this process on its deliveries (Config.InstanceID).
	instance string
	log      *slog.Logger
	// consuming is the number of the session whose channel consumes the
	// queue now, 0 when none does; sessions counts them.
	consuming atomic.Int64
	sessions  int64
}

// session runs one connection's worth of consuming.
func (c *consumer) session(ctx context.Context) error {
	if err := c.b.ensureBase(ctx); err != nil {
		return err
	}
	if err := c.b.apply(ctx, c.b.subPlan(c.sub)); err != nil {
		return err
	}
	conn, err := c.b.dial(ctx, "consumer-"+c.sub.Group)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open consume channel: %w", err)
	}
	if err := ch.Qos(c.sub.Prefetch, 0, false); err != nil {
		return fmt.Errorf("rabbit: set prefetch %d: %w", c.sub.Prefetch, err)
	}
	hold, sub := c.b.holds.Of(c.sub.Topic, c.sub.Group), &subscriber{c: c, ch: ch, giveBack: nackRequeue}
	held, holdChanged := hold.State()
	if err := sub.follow(held, 0); err != nil {
		return err
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	// Not consuming from the moment the channel closes, even while the
	// loop below waits for a busy handler slot.
	lost := ch.NotifyClose(make(chan *amqp.Error, 1))
	c.sessions++
	session := c.sessions
	c.consuming.Store(session)
	go func() {
		<-lost
		c.consuming.CompareAndSwap(session, 0)
	}()

	// Handlers run on a context that outlives ctx by the shutdown timeout.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	// Forwarders publish retry, dead-letter and delay-hop copies and ack
	// once the broker confirmed, so a handler slot never waits on a confirm
	// and the copies of many deliveries are in flight at once. Prefetch
	// bounds them: every one holds an unacked delivery.
	fwd, fwdStop := make(chan forwardJob), make(chan struct{})
	var fwg sync.WaitGroup
	for range max(c.sub.Prefetch, c.sub.Concurrency) {
		fwg.Go(func() {
			for {
				select {
				case j := <-fwd:
					if c.forward(hctx, j.m, j.out) && j.then != nil {
						j.then()
					}
				case <-fwdStop:
					return
				}
			}
		})
	}
	sub.giveBack = c.handBack(hctx, fwd)
	work := make(chan amqp.Delivery)
	var wg sync.WaitGroup
	for range c.sub.Concurrency {
		wg.Go(func() {
			for m := range work {
				c.process(hctx, m, fwd)
			}
		})
	}
	// stop lets in-flight handlers and forwards finish within the shutdown
	// timeout. Past it, their context is cancelled: forwards requeue their
	// delivery, and a handler that ignores its context is left behind (its
	// delivery is requeued when the channel closes).
	stop := func() {
		deadline := time.NewTimer(c.sub.ShutdownTimeout)
		defer deadline.Stop()
		close(work)
		if !waitFor(&wg, deadline.C) {
			c.log.Warn("rabbit: handlers still running after the shutdown timeout; their messages are requeued",
				"timeout", c.sub.ShutdownTimeout)
			hcancel()
		}
		// No handler sends any more (or, cancelled, sends requeue instead):
		// the unbuffered fwd holds nothing, so the forwarders may stop.
		close(fwdStop)
		if !waitFor(&fwg, deadline.C) {
			hcancel()
			fwg.Wait() // forwards return promptly once cancelled
		}
	}

	var sessionErr error
loop:
	for {
		select {
		case <-holdChanged:
			held, holdChanged = hold.State()
			if sessionErr = sub.follow(held, 0); sessionErr != nil {
				break loop
			}
		case <-ctx.Done():
			if sub.deliveries != nil {
				// What was prefetched goes back now (a copy on quorum
				// queues), not with the channel's close.
				cancelAndReturn(ch, sub.tag, sub.deliveries, sub.giveBack)
			}
			break loop
		case e := <-closed:
			if e != nil {
				sessionErr = fmt.Errorf("rabbit: channel closed: %w", e)
			} else {
				sessionErr = errors.New("rabbit: channel closed")
			}
			break loop
		case m, ok := <-sub.deliveries:
			if !ok {
				sessionErr = errors.New("rabbit: delivery stream ended")
				break loop
			}
			select {
			case work <- m:
			case <-holdChanged:
				// Paused while every handler is busy: m goes back with
				// the rest (resumed at once: the stream goes on).
				sub.giveBack(m)
				held, holdChanged = hold.State()
				_ = sub.follow(held, 1) // a cancel cannot fail
			case <-ctx.Done():
				sub.giveBack(m)
				cancelAndReturn(ch, sub.tag, sub.deliveries, sub.giveBack)
				break loop
			}
		}
	}
	c.consuming.CompareAndSwap(session, 0)
	stop()
	// Closing the channel requeues whatever was delivered but not acked.
	_ = ch.Close()
	return sessionErr
}

// process moves one delivery on: a delay hop, or the pipeline's decision
// executed (an ack, a retry copy, a dead-letter copy, a hand-back copy with
// the same attempt: requeue). A delivery whose properties the client
// could not decode (undecodable) is dead-lettered without a hop, a claim
// or its handler. The delivery is acked only after its next home
// confirmed.
func (c *consumer) process(ctx context.Context, m amqp.Delivery, fwd chan<- forwardJob) {
	why, marked := undecodable(m.Headers)
	if rem := remainingDelay(m.Headers); rem > 0 && !marked {
		c.hop(ctx, m, rem, fwd)
		return
	}
	d := c.delivery(m, c.sub.HeadersOnDemand)
	in := driver.Input{Undecodable: why} // dead-lettered unhandled
	if !marked {
		in = c.claim(m, d)
	}
	dec := c.pipe.Process(ctx, d, c.h, in)
	switch dec.Action {
	case driver.ActionAck:
		if aerr := m.Ack(false); aerr != nil {
			c.log.Warn("rabbit: ack failed; the message will be redelivered", "message_id", m.MessageId, "error", aerr)
			return
		}
		c.pipe.Release(ctx, dec)
		return
	case driver.ActionStop:
		_ = m.Nack(false, true)
		return
	case driver.ActionRequeue:
		c.requeue(ctx, m, fwd, func() { c.pipe.Release(ctx, dec) })
		return
	}
	if dec.Cause != nil {
		d = c.delivery(m, false) // the handler may have changed d: the copy tells the story as delivered
	}
	h := storyTable(m, d, dec.Outcome, dec.At)
	out := outgoing{exchange: c.b.names.DLX(), key: c.queue, msg: republish(m, h)}
	if dec.Action == driver.ActionRetry {
		out = c.delayed(m, h, dec.Outcome.Delay, 0)
	}
	c.send(ctx, fwd, forwardJob{m: m, out: out, then: func() { c.pipe.Release(ctx, dec) }})
}

// delayed builds the copy of m that comes back to this queue after delay:
// straight through the retry exchange, or through the largest tier that
// fits with the rest in x-remaining-delay.
func (c *consumer) delayed(m amqp.Delivery, h amqp.Table, delay time.Duration, passes int) outgoing {
	if h == nil { // written to below
		h = amqp.Table{}
	}
	if c.b.cfg.Delay.Mode == DelayRoute && delay > 0 {
		r := c.b.tiers.routeKey(delay, c.queue)
		if r.leftMS > 0 {
			h[broker.HeaderRemainingDelay] = r.leftMS
		} else {
			delete(h, broker.HeaderRemainingDelay)
		}
		h[HeaderTierPasses] = int64(passes + r.stored)
		msg := republish(m, h)
		msg.Expiration = r.expire
		return outgoing{exchange: c.b.names.RouteLevel(0), key: r.key, msg: msg}
	}
	tier, left := c.b.tiers.next(delay)
	if tier == 0 {
		delete(h, broker.HeaderRemainingDelay)
		return outgoing{exchange: c.b.names.Retry(), key: c.queue, msg: republish(m, h)}
	}
	h[broker.HeaderRemainingDelay] = left
	h[HeaderTierPasses] = int64(passes + 1)
	return outgoing{exchange: c.b.names.Tier(tier), key: c.queue, msg: republish(m, h)}
}

// Headers of the properties a copy cannot carry as properties (see
// republish): the original's expiration and user id, kept for the
// dead-letter entry, never set back on a replay.
const (
	HeaderExpiration = "x-redrive-expiration"
	HeaderUserID     = "x-redrive-user-id"
)

// HeaderTierPasses counts the delay tiers a message passed through during
// its current wait (a PublishDelayed delay or one retry back-off).
const HeaderTierPasses = "x-redrive-tier-passes"

// hop moves a message that still has time to wait to its next tier,
// without calling the handler.
func (c *consumer) hop(ctx context.Context, m amqp.Delivery, remaining time.Duration, fwd chan<- forwardJob) {
	h := copyTable(m.Headers, brokerOwned)
	if _, ok := h[driver.HeaderTopic]; !ok {
		// The copy leaves the topic exchange: say which topic it came
		// from (a foreign producer's delayed message does not).
		h[driver.HeaderTopic] = c.sub.Topic
	}
	c.send(ctx, fwd, forwardJob{m: m, out: c.delayed(m, h, remaining, intHeader(m.Headers, HeaderTierPasses))})
}

// delivery is the handler's view of m (its headers as strings unless
// onDemand).
func (c *consumer) delivery(m amqp.Delivery, onDemand bool) *broker.Delivery {
	var h map[string]string
	if !onDemand {
		h = fromTable(m.Headers)
		delete(h, broker.HeaderRemainingDelay)
	}
	d := &broker.Delivery{
		Message: broker.Message{
			ID:        messageID(m),
			Value:     m.Body,
			Headers:   h,
			Timestamp: m.Timestamp,
		},
		Group:       c.sub.Group,
		Instance:    c.instance,
		Source:      c.queue,
		Partition:   -1,
		Offset:      -1,
		Redelivered: m.Redelivered,
	}
	if onDemand {
		driver.SetHeaderReader(d, onDemandTable(m.Headers))
	}
	d.Topic = d.Header(driver.HeaderTopic)
	if d.Topic == "" {
		d.Topic = c.sub.Topic
	}
	if k, ok := d.LookupHeader(driver.HeaderKey); ok { // an empty key stays empty, not nil
		d.Key = []byte(k)
	}
	driver.ReadStory(d)
	return d
}

// messageID is m's message id: its message-id property, or, for a message
// published without one, a broker.DerivedMessageID of its content (body,
// properties and application headers: formOf), the same on every
// redelivery, which its retry, delay and dead-letter copies carry
// (republish), so that the message keeps one id however often it comes
// back. Two messages of identical content published without ids have the
// same one.
func messageID(m amqp.Delivery) string {
	if m.MessageId != "" {
		return m.MessageId
	}
	form, err := wire.Encode(formOf(m))
	if err != nil { // a table too deep to encode: its text form instead
		form = fmt.Append(nil, m.Headers, m.ContentType, m.Type, m.CorrelationId, m.Timestamp.UnixNano())
	}
	return broker.DerivedMessageID([]byte("amqp"), form, m.Body)
}

// republish copies m's body and properties into a new publishing with
// headers h: a retry, delay or dead-letter copy carries the original's
// properties, delivery mode included, except per-message expiration (a
// copy waits in tiers) and user id (RabbitMQ checks it against the
// publishing connection): those travel as the headers HeaderExpiration and
// HeaderUserID, so that the dead-letter entry keeps them.
func republish(m amqp.Delivery, h amqp.Table) amqp.Publishing {
	if h == nil { // written to below
		h = amqp.Table{}
	}
	if m.Expiration != "" {
		h[HeaderExpiration] = m.Expiration
	}
	if m.UserId != "" {
		h[HeaderUserID] = m.UserId
	}
	return amqp.Publishing{
		Headers:         h,
		ContentType:     m.ContentType,
		ContentEncoding: m.ContentEncoding,
		DeliveryMode:    m.DeliveryMode,
		Priority:        m.Priority,
		CorrelationId:   m.CorrelationId,
		ReplyTo:         m.ReplyTo,
		MessageId:       messageID(m),
		Timestamp:       m.Timestamp,
		Type:            m.Type,
		AppId:           m.AppId,
		Body:            m.Body,
	}
}
