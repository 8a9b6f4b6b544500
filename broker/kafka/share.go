package kafka

// Share mode (broker.Share): the worker consumes <topic> as a Kafka share
// group (KIP-932) named after it, and acknowledges record by record.
//
// franz-go accepts, on a client's next poll, every record of its last
// poll that has no final acknowledgement yet (a renewed one too). So a
// client never polls while it holds a record: a Consume runs several
// members of the group (shareMember), each a client that takes up to
// Subscription.Prefetch records per poll, hands them to the Consume's
// handlers and polls again only once every one of them is settled
// (ACCEPTed or RELEASEd). A member that holds a record (a slow handler,
// a back-off waited out under the lock) fetches nothing meanwhile; the
// others go on. A member whose records are all settled but those it
// holds in back-offs sends the acknowledgements it marked at once (they
// would go with its next poll; sent, they move the share partition's
// start offset on), and again once the back-offs are over. Members poll
// in turns: Config.ShareMembers turns, and with Config.ShareStandby as
// many members more, which poll in the place of members waiting out
// back-offs (those give their turn back). Nothing is ever acknowledged
// that was not handled, copied or given back.
//
// What happens to a record (shareConsumer.process, shareConsumer.settle):
// handled: ACCEPT; a back-off within Config.ShareMaxHold (default: the
// lock): held in memory, its lock renewed, the handler slot free, then
// handled again in place; a longer back-off: a copy to
// <topic>.retry.<group> (read by the consumer group ShareRetryGroup), then
// ACCEPT once the copy is acknowledged; dead-lettered: the <topic>.dlq
// envelope is written and acknowledged, then ACCEPT; requeued
// (broker.Requeue): handled again in place, same attempt; not handled
// because the consumer stops: RELEASE. A record delivered more than
// Subscription.MaxClaims times (the broker's delivery count) is
// dead-lettered without calling the handler.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// workBuffer is how many records the members may queue for the handler
// goroutines.
const workBuffer = 1024

// GroupTypeShare is driver.Entry.GroupType (the envelope's group_type) of a
// record dead-lettered from a share group.
const GroupTypeShare = "share"

// shareConsumer runs one Consume call in share mode: its members, the
// handlers they share, and the consumer group of the retry topic.
type shareConsumer struct {
	b    *Broker
	sub  broker.Subscription // MaxClaims as the delivery limit allows (shareClaims)
	h    broker.Handler
	log  *slog.Logger
	pipe *driver.Pipeline
	// rc reads the group's retry topic as the consumer group
	// ShareRetryGroup, and builds the retry and dead-letter copies.
	rc *consumer
	// slots bounds the handlers running at once, shared with rc.
	slots *slots
	// work hands records to the handler goroutines; its buffer spares the
	// members a goroutine switch per record.
	work chan *shareRecord
	// hctx is the handlers' context: the values of Consume's, canceled
	// when a stop gives up waiting for them (hcancel).
	hctx    context.Context
	hcancel context.CancelFunc
	// stopping is closed when Consume's context ends: no record is taken
	// any more, and what is not running is given back.
	stopping chan struct{}
	// maxHold is Config.ShareMaxHold; 0 = the lock duration.
	maxHold time.Duration
	// turns holds a token for each member polling (or handling what it
	// polled); its capacity is Config.ShareMembers.
	turns   chan struct{}
	members []*shareMember
}

// consumeShare is Consume for a share-mode subscription (sub has its
// defaults and was declared).
func (b *Broker) consumeShare(ctx context.Context, sub broker.Subscription, h broker.Handler) error {
	log := b.log.With("topic", sub.Topic, "group", sub.Group)
	limit, err := b.deliveryLimit(ctx, sub.Group)
	if err != nil && ctx.Err() == nil {
		log.Warn("cannot read the share group's delivery limit; assuming Kafka's default", "delivery_limit", limit, "error", err)
	}
	sub = shareClaims(sub, limit, log)
	n, err := b.shareMembers(ctx, sub.Topic)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	standby := b.shareStandby()
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	c := &shareConsumer{
		b: b, sub: sub, h: h, log: log,
		pipe:     driver.NewPipeline(sub, log),
		slots:    newSlots(sub.Concurrency),
		work:     make(chan *shareRecord, workBuffer),
		hctx:     hctx,
		hcancel:  hcancel,
		stopping: make(chan struct{}),
		maxHold:  b.cfg.ShareMaxHold,
		turns:    make(chan struct{}, n),
	}
	rsub := sub
	rsub.RetryMode = broker.NonBlocking // its records wait in the retry topic
	c.rc = newConsumer(b, rsub, log.With("consumer", ShareRetryGroup(sub.Group)))
	c.rc.h, c.rc.retryTopic, c.rc.slots = h, RetryTopic(sub.Topic, sub.Group), c.slots
	for i := range n + standby {
		m, err := c.newMember(i)
		if err != nil {
			c.closeMembers()
			return err
		}
		c.members = append(c.members, m)
	}
	log.Info("consuming", "retry_mode", broker.Share, "members", n, "standby", standby, "concurrency", sub.Concurrency, "prefetch", sub.Prefetch,
		"fetch_ahead", b.cfg.ShareFetchAhead, "max_hold", c.maxHold, "delivery_limit", limit, "max_claims", sub.MaxClaims)
	c.pipe.WarnUncountedClaims(true)
	defer b.track(sub.Topic, sub.Group, c.rc)()
	defer b.trackShare(sub.Topic, sub.Group)()
	c.run(ctx)
	return nil
}

// shareClaims returns sub with the MaxClaims its share group can count:
// the broker archives a record delivered limit times without a final
// acknowledgement, silently, so a poison pill must be dead-lettered at
// the latest on its limit-th delivery (MaxClaims limit − 1). MaxClaims 0
// (off) or above that is lowered to it, with a log line.
func shareClaims(sub broker.Subscription, limit int, log *slog.Logger) broker.Subscription {
	most := limit - 1
	if most < 1 || (sub.MaxClaims > 0 && sub.MaxClaims <= most) {
		return sub
	}
	msg := "max_claims lowered below the broker's delivery limit: the broker would archive a poison pill, never dead-lettered"
	if sub.MaxClaims == 0 {
		msg = "max_claims set from the broker's delivery limit: in share mode the broker counts deliveries, and archives a record past its limit"
	}
	lvl := slog.LevelWarn
	if sub.MaxClaimsDefault || sub.MaxClaims == 0 {
		lvl = slog.LevelInfo
	}
	log.Log(context.Background(), lvl, msg, "max_claims", sub.MaxClaims, "delivery_limit", limit, "now", most)
	sub.MaxClaims = most
	return sub
}

// shareMembers returns Config.ShareMembers, or by default twice the
// partition count of topic + 1, from 3 to MaxShareMembers.
func (b *Broker) shareMembers(ctx context.Context, topic string) (int, error) {
	if b.cfg.ShareMembers > 0 {
		return b.cfg.ShareMembers, nil
	}
	details, err := b.describeTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	return min(max(2*int(details[topic].Partitions)+1, 3), MaxShareMembers), nil
}

// shareStandby returns Config.ShareStandby, none when fetching ahead (a
// standby member would fetch ahead, and leave locked, records it does
// not poll).
func (b *Broker) shareStandby() int {
	if b.cfg.ShareFetchAhead {
		return 0
	}
	return b.cfg.ShareStandby
}

// takeTurn waits for a turn to poll; it returns false when ctx ends
// first.
func (c *shareConsumer) takeTurn(ctx context.Context) bool {
	select {
	case c.turns <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// giveTurn gives back a turn takeTurn took.
func (c *shareConsumer) giveTurn() { <-c.turns }

// run consumes until ctx ends, then shuts down.
func (c *shareConsumer) run(ctx context.Context) {
	var handlers, members sync.WaitGroup
	for range c.sub.Concurrency {
		handlers.Go(c.handle)
	}
	for _, m := range c.members {
		members.Go(func() { m.run(ctx) })
	}
	go c.watchPause(ctx)
	retryDone := make(chan struct{})
	go func() {
		defer close(retryDone)
		if err := c.rc.consume(ctx, ShareRetryGroup(c.sub.Group), c.rc.retryTopic); err != nil {
			c.log.Error("cannot consume the retry topic", "retry_topic", c.rc.retryTopic, "error", err)
		}
	}()
	<-ctx.Done()
	start := time.Now()
	close(c.stopping)
	membersDone, drained := make(chan struct{}), make(chan struct{})
	go func() { // what waits for a handler is given back at once
		defer close(drained)
		c.drainWork(membersDone)
	}()
	members.Wait() // each has given back what it held, or given up waiting
	close(membersDone)
	<-drained
	c.hcancel()
	if !waitFor(&handlers, drainGrace) {
		c.log.Warn("handler did not return in time; its record is given back when the member leaves")
	}
	c.closeMembers()
	<-retryDone
	c.log.Info("stopped consuming", "took", time.Since(start))
}

// waitFor waits for wg, at most d; it reports whether wg was done.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// watchPause applies the worker's pause (Broker.PauseConsume) to its
// members until ctx ends: paused, they fetch nothing and take nothing;
// what they hold waits at the handlers' gate, its locks renewed.
func (c *shareConsumer) watchPause(ctx context.Context) {
	c.b.followHold(ctx, c.sub.Topic, c.sub.Group, func(on bool) {
		for _, m := range c.members {
			m.pauseFetching(on)
		}
		if on {
			c.log.Info("consumer paused: members take no records")
		} else {
			c.log.Info("consumer resumed: members take records again")
		}
	})
}

// closeMembers closes the members' clients; leaving the group gives back
// whatever a member still holds.
func (c *shareConsumer) closeMembers() {
	for _, m := range c.members {
		m.cl.Close()
	}
}

// isStopping reports whether Consume's context ended.
func (c *shareConsumer) isStopping() bool {
	select {
	case <-c.stopping:
		return true
	default:
		return false
	}
}

// handle is one of the handler goroutines: it processes the records the
// members hand over until the consumer stops.
func (c *shareConsumer) handle() {
	for {
		select {
		case sr := <-c.work:
			c.process(sr)
		case <-c.stopping:
			return
		}
	}
}

// dispatch hands sr to a handler goroutine, or gives it back when the
// consumer stops first.
func (c *shareConsumer) dispatch(sr *shareRecord) {
	select {
	case c.work <- sr:
	case <-c.stopping:
		sr.settle(kgo.AckRelease)
	}
}

// drainWork gives back the records waiting for a handler goroutine once
// the consumer stops, until done is closed and none is left.
func (c *shareConsumer) drainWork(done <-chan struct{}) {
	for {
		select {
		case sr := <-c.work:
			sr.settle(kgo.AckRelease)
		case <-done:
			for {
				select {
				case sr := <-c.work:
					sr.settle(kgo.AckRelease)
				default:
					return
				}
			}
		}
	}
}

// gate is the handler as the pipeline calls it: it runs when a
// concurrency slot is free, and returns driver.ErrStopped, without
// calling the handler, when the consumer stops first.
func (c *shareConsumer) gate(ctx context.Context, d *broker.Delivery) error {
	if !c.slots.take(c.stopping) {
		return driver.ErrStopped
	}
	defer c.slots.give()
	return c.h(ctx, d)
}
