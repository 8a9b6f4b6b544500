package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// maxPollRecords bounds the records one poll hands to the partition workers.
const maxPollRecords = 1000

// throttleWait is how long the poll loop waits for a worker whose buffer
// is full to drain it to half before it pauses fetching the worker's
// partition instead (consumer.waitForRoom).
const throttleWait = 50 * time.Millisecond

// drainGrace is how long a stopping consumer still waits for handlers whose
// context it canceled once the shutdown timeout passed.
const drainGrace = 500 * time.Millisecond

// tp names a topic partition.
type tp struct {
	topic string
	part  int32
}

// consumer runs one Consume call: a group client, a poll loop that hands
// records to one worker per partition, and a committer.
type consumer struct {
	b   *Broker
	sub broker.Subscription
	h   broker.Handler
	log *slog.Logger
	cl  *kgo.Client
	// clp is cl for other goroutines (ConsumerReady), set once consume
	// created the client.
	clp atomic.Pointer[kgo.Client]

	// retryTopic is the group's retry topic, <topic>.retry.<group>: the
	// waiting room of non_blocking retries, and where replays of the
	// group's dead letters arrive (both modes).
	retryTopic string
	// slots bounds the handlers running at once (sub.Concurrency).
	slots *slots
	// hctx is the parent of handler contexts: the values of Consume's
	// context, canceled only when a stop gives up waiting.
	hctx context.Context
	// proc handles one record until it is done (true) or its worker is
	// halted (false): (*partition).process for Consume, the keeper's
	// store-and-retry for ConsumeDeadLetters.
	proc func(p *partition, r *kgo.Record) bool
	// procBatch, when set, replaces proc: it handles the records a worker
	// has at hand, a batch at a time (the keeper's, see runBatches).
	procBatch func(p *partition, rs []*kgo.Record) bool

	// room is signaled when a worker the poll loop waits for has drained
	// its buffer to half, or was halted.
	room chan struct{}

	// commitMu serializes commits with revocations, so that a periodic
	// commit never carries the offset of a partition already handed on.
	commitMu sync.Mutex

	mu    sync.Mutex
	parts map[tp]*partition
}

// Consume joins the group sub.Group on sub.Topic and its retry topic, hands
// each record to h and blocks until ctx ends: a partition's records in
// order, partitions concurrently (at most sub.Concurrency handlers), the
// retry topic's when due, earliest first (share mode: consumeShare). An
// offset is committed only once its record is handled or its retry or
// dead-letter copy acknowledged. When ctx ends, Consume stops taking
// records, lets running handlers finish (bounded by sub.ShutdownTimeout),
// commits what is done, leaves the group and returns nil.
func (b *Broker) Consume(ctx context.Context, sub broker.Subscription, h broker.Handler) error {
	if b.isClosed() {
		return broker.ErrClosed
	}
	if h == nil {
		return fmt.Errorf("%w: handler is nil", broker.ErrInvalidSubscription)
	}
	if err := sub.Validate(); err != nil {
		return err
	}
	sub = sub.WithDefaults()
	if err := b.Declare(ctx, sub); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if sub.RetryMode == broker.Share {
		return b.consumeShare(ctx, sub, h)
	}
	c := newConsumer(b, sub, b.log.With("topic", sub.Topic, "group", sub.Group))
	c.h, c.retryTopic = h, RetryTopic(sub.Topic, sub.Group)
	c.log.Info("consuming", "retry_mode", sub.RetryMode, "concurrency", sub.Concurrency, "max_claims", sub.MaxClaims)
	defer b.track(sub.Topic, sub.Group, c)()
	driver.NewPipeline(sub, c.log).WarnUncountedClaims(false)
	if err := c.consume(ctx, sub.Group, sub.Topic, c.retryTopic); err != nil {
		return fmt.Errorf("kafka: consume %q as %q: %w", sub.Topic, sub.Group, err)
	}
	return nil
}

// newConsumer returns a consumer of sub (its concurrency and shutdown
// timeout apply); the caller sets what it handles.
func newConsumer(b *Broker, sub broker.Subscription, log *slog.Logger) *consumer {
	c := &consumer{
		b:     b,
		sub:   sub,
		log:   log,
		slots: newSlots(sub.Concurrency),
		room:  make(chan struct{}, 1),
		parts: make(map[tp]*partition),
	}
	c.proc = (*partition).process
	return c
}

// consume joins group on topics and runs until ctx ends.
func (c *consumer) consume(ctx context.Context, group string, topics ...string) error {
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	c.hctx = hctx
	b := c.b
	opts := b.baseOptions()
	opts = append(opts,
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(b.cfg.FetchMaxWait),
		kgo.HeartbeatInterval(b.cfg.HeartbeatInterval),
		kgo.SessionTimeout(b.cfg.SessionTimeout),
		kgo.RebalanceTimeout(b.cfg.RebalanceTimeout),
		kgo.OnPartitionsRevoked(c.onRevoked),
		kgo.OnPartitionsLost(c.onLost),
	)
	opts = append(opts, b.cfg.clientOptions()...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	c.cl = cl
	c.clp.Store(cl)
	if c.retryTopic != "" { // Consume's, not the keeper's: PauseConsume
		go c.watchHold(ctx)
	}
	c.run(ctx)
	return nil
}

// run polls until ctx ends, then shuts down.
func (c *consumer) run(ctx context.Context) {
	commitCtx, stopCommitter := context.WithCancel(context.Background())
	committerDone := make(chan struct{})
	go func() {
		defer close(committerDone)
		c.commitLoop(commitCtx)
	}()

	for {
		c.waitForRoom(ctx)
		fetches := c.cl.PollRecords(ctx, maxPollRecords)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			c.cl.AllowRebalance()
			break
		}
		fetches.EachError(func(topic string, part int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			c.log.Warn("fetch error", "fetch_topic", topic, "partition", part, "error", err)
		})
		fetches.EachPartition(func(f kgo.FetchTopicPartition) {
			if len(f.Records) > 0 {
				c.partition(f.Topic, f.Partition).push(f.Records, f.HighWatermark)
			}
		})
		c.cl.AllowRebalance()
	}

	stopCommitter()
	<-committerDone
	c.shutdown()
}

// waitForRoom holds the poll loop while a worker whose partition is
// fetched has a full buffer (Config.MaxBuffered records or
// Config.MaxBufferedBytes), until it drained to half. This is the usual
// back-pressure: franz-go fetches a partition again only once the records
// already fetched were polled, so nothing more is buffered meanwhile, and
// fetching never stops, so that the partition is not left behind a long
// poll (FetchMaxWait) on its broker when the worker catches up. A worker
// that does not drain to half within throttleWait (a slow handler, a
// back-off) is not waited for: fetching its partition pauses until it did,
// and it is paused at once the next time it is full, so that one slow
// partition does not hold the others back.
func (c *consumer) waitForRoom(ctx context.Context) {
	var timeout <-chan time.Time
	for {
		full := false
		for _, p := range c.current() {
			p.mu.Lock()
			if !p.paused && !p.stopped && p.overLocked() {
				p.full = true
				full = true
			}
			p.mu.Unlock()
		}
		if !full {
			return
		}
		if timeout == nil {
			t := time.NewTimer(throttleWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-c.room:
			continue
		case <-ctx.Done():
			return
		case <-timeout:
		}
		for _, p := range c.current() {
			p.mu.Lock()
			if p.full && !p.halfLocked() {
				if !p.slow {
					p.log.Debug("worker slower than fetching: its partition pauses whenever its buffer is full",
						"buffered", len(p.queue)+p.held, "buffered_bytes", p.bytes)
				}
				p.slow = true
				p.pauseFullLocked()
			}
			p.full = false
			p.mu.Unlock()
		}
		return
	}
}

// signalRoom wakes a waitForRoom.
func (c *consumer) signalRoom() {
	select {
	case c.room <- struct{}{}:
	default:
	}
}

// shutdown stops every worker (bounded by sub.ShutdownTimeout), commits
// what is done and leaves the group.
func (c *consumer) shutdown() {
	start := time.Now()
	c.commitMu.Lock()
	ps := c.take(nil)
	c.stop(ps, c.sub.ShutdownTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), c.b.cfg.DeliveryTimeout)
	c.commit(ctx, ps)
	cancel()
	c.commitMu.Unlock()
	c.cl.CloseAllowingRebalance()
	c.log.Info("stopped consuming", "took", time.Since(start))
}

// partition returns the worker of topic/part, starting it when needed.
func (c *consumer) partition(topic string, part int32) *partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := tp{topic, part}
	p := c.parts[k]
	if p == nil {
		p = newPartition(c, topic, part)
		c.parts[k] = p
		go p.run()
	}
	return p
}

// take removes and returns the workers of the partitions in which (all when
// which is nil).
func (c *consumer) take(which map[string][]int32) []*partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*partition
	for k, p := range c.parts {
		if which == nil || slices.Contains(which[k.topic], k.part) {
			out = append(out, p)
			delete(c.parts, k)
		}
	}
	return out
}

// current returns the running workers.
func (c *consumer) current() []*partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*partition, 0, len(c.parts))
	for _, p := range c.parts {
		out = append(out, p)
	}
	return out
}

// stop halts ps: they take no new record and abandon waits at once; running
// handlers may finish within bound, after which their contexts are canceled
// and, past a short grace, they are left behind (their records not
// committed).
func (c *consumer) stop(ps []*partition, bound time.Duration) {
	if len(ps) == 0 {
		return
	}
	for _, p := range ps {
		p.halt()
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for i, p := range ps {
		select {
		case <-p.exited:
			continue
		case <-timer.C:
		}
		for _, q := range ps[i:] {
			q.cancel()
		}
		grace := time.NewTimer(drainGrace)
		for _, q := range ps[i:] {
			select {
			case <-q.exited:
			case <-grace.C:
				c.log.Warn("handler did not return in time; its record is left uncommitted", "partition_topic", q.topic, "partition", q.part)
			}
		}
		grace.Stop()
		return
	}
}

// revokeBound bounds how long a revocation waits for running handlers: the
// shutdown timeout, but well within the group's rebalance timeout.
func (c *consumer) revokeBound() time.Duration {
	return min(c.sub.ShutdownTimeout, c.b.cfg.RebalanceTimeout/2)
}

// onRevoked stops the workers of revoked partitions, commits what they
// finished and resumes fetching them (a partition paused by a worker must
// not stay paused when it is assigned again).
func (c *consumer) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	ps := c.take(revoked)
	if len(ps) == 0 {
		return
	}
	c.stop(ps, c.revokeBound())
	cctx, cancel := context.WithTimeout(ctx, c.b.cfg.DeliveryTimeout)
	c.commit(cctx, ps)
	cancel()
	cl.ResumeFetchPartitions(revoked)
	c.log.Info("partitions revoked", "partitions", revoked)
}

// onLost stops the workers of lost partitions without committing: the
// group has moved on and a commit would fail.
func (c *consumer) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	ps := c.take(lost)
	c.stop(ps, c.revokeBound())
	cl.ResumeFetchPartitions(lost)
	if len(ps) > 0 {
		c.log.Warn("partitions lost; their uncommitted records will be handled again", "partitions", lost)
	}
}

// commitLoop commits done offsets every Config.CommitInterval.
func (c *consumer) commitLoop(ctx context.Context) {
	t := time.NewTicker(c.b.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.commitMu.Lock()
		c.commit(ctx, c.current())
		c.commitMu.Unlock()
	}
}

// commit synchronously commits the done offsets of ps that moved since
// their last commit. Callers hold commitMu.
func (c *consumer) commit(ctx context.Context, ps []*partition) {
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	byTP := make(map[tp]*partition)
	for _, p := range ps {
		eo, ok := p.uncommitted()
		if !ok {
			continue
		}
		if offsets[p.topic] == nil {
			offsets[p.topic] = make(map[int32]kgo.EpochOffset)
		}
		offsets[p.topic][p.part] = eo
		byTP[tp{p.topic, p.part}] = p
	}
	if len(offsets) == 0 {
		return
	}
	c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("commit failed", "error", err)
			}
			return
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				p := byTP[tp{t.Topic, rp.Partition}]
				if p == nil {
					continue
				}
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					c.log.Warn("commit refused", "partition_topic", t.Topic, "partition", rp.Partition, "error", err)
					continue
				}
				p.committedUpTo(offsets[t.Topic][rp.Partition].Offset)
			}
		}
	})
}
