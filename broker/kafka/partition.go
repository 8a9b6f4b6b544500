package kafka

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// partition is the worker of one assigned topic partition: it handles the
// partition's records one after the other and tracks the offset up to which
// they are done.
type partition struct {
	c     *consumer
	topic string
	part  int32
	log   *slog.Logger
	// pipe runs the partition's deliveries (max age, claims, the handler,
	// the retry decision); gated is gate, the handler it calls.
	pipe  *driver.Pipeline
	gated broker.Handler

	// ctx is the handlers' context; cancel is called when a stop gives up
	// waiting for them.
	ctx    context.Context
	cancel context.CancelFunc

	wake    chan struct{} // a record was pushed, or a copy refused
	settled chan struct{} // a copy in flight was acknowledged or refused
	halted  chan struct{} // closed by halt
	exited  chan struct{} // closed when run returns

	// byDue is set for the partitions of the retry topic: their records are
	// handled when due, earliest first, not in offset order (see runByDue).
	byDue bool
	// slab holds the Deliveries of the records run took off the buffer
	// and has not handled yet (see newDelivery); maps, with
	// Subscription.ReuseDeliveries, the Headers maps they reuse. reuse and
	// reuseMaps are what newSlab refills for each batch then. Only the
	// worker uses them.
	slab      []broker.Delivery
	maps      []map[string]string
	reuse     []broker.Delivery
	reuseMaps []map[string]string

	mu      sync.Mutex
	queue   []*kgo.Record
	held    int // records taken from queue, not yet done (take, runByDue)
	bytes   int // size of the records in queue and held (recordBytes)
	stopped bool
	paused  bool // fetching this partition is paused
	waiting bool // the worker waits for a back-off or a due time
	// full is set by the poll loop while it waits for this worker to
	// drain its buffer to half (consumer.waitForRoom); the worker then
	// signals consumer.room.
	full bool
	// slow is set when the worker did not drain its full buffer to half
	// within throttleWait: the next time it is full, fetching the
	// partition pauses at once instead of holding up the poll loop. It is
	// cleared when a paused buffer drains to half within throttleWait.
	slow     bool
	pausedAt time.Time // when a full buffer paused fetching (zero otherwise)
	// done is the offset after the last record done in offset order;
	// copies (window.go) are the retry and dead-letter copies in flight,
	// copyBytes their size: the commit watermark stays at the lowest
	// source offset among them.
	done      kgo.EpochOffset
	copies    []*inFlight
	copyBytes int
	// inWindow is len(copies), changed with p.mu held, read without it
	// by settleCopies' check for the usual empty window.
	inWindow  atomic.Int32
	committed int64
	// first is the offset of the first record fetched (-1 before any);
	// hwm the highest high watermark a fetch reported (see lag).
	first, hwm int64
}

func newPartition(c *consumer, topic string, part int32) *partition {
	ctx, cancel := context.WithCancel(c.hctx)
	log := c.log.With("partition_topic", topic, "partition", part)
	p := &partition{
		c:         c,
		topic:     topic,
		part:      part,
		log:       log,
		pipe:      driver.NewPipeline(c.sub, log),
		byDue:     topic == c.retryTopic,
		ctx:       ctx,
		cancel:    cancel,
		wake:      make(chan struct{}, 1),
		settled:   make(chan struct{}, 1),
		halted:    make(chan struct{}),
		exited:    make(chan struct{}),
		done:      kgo.EpochOffset{Epoch: -1, Offset: -1},
		committed: -1,
		first:     -1,
		hwm:       -1,
	}
	p.gated = p.gate
	return p
}

// run handles records until the worker is halted.
func (p *partition) run() {
	defer close(p.exited)
	defer p.cancel()
	defer p.awaitCopies()
	if p.byDue {
		p.runByDue()
		return
	}
	if p.c.procBatch != nil {
		p.runBatches()
		return
	}
	// batch holds the records taken off the buffer, next the index of
	// the next one to handle. Handled records are cleared all at once when
	// the batch is done, not one by one: a pointer written in the heap
	// goes through the collector's write barrier while it marks.
	var batch []*kgo.Record
	next := 0
	for {
		if !p.settleCopies(0) {
			return
		}
		if next == len(batch) {
			clear(batch)
			var ok bool
			if batch, ok = p.take(batch[:0]); !ok {
				return
			}
			next = 0
			if len(batch) == 0 { // woken by a refused copy
				continue
			}
			p.newSlab(len(batch))
		}
		r := batch[next]
		next++
		if !p.c.proc(p, r) {
			return
		}
		p.finished(r)
	}
}

// sleepUntil waits until t with fetching of the partition paused. It
// returns false when the worker is halted first.
func (p *partition) sleepUntil(t time.Time) bool {
	if !time.Now().Before(t) {
		return !p.isHalted()
	}
	p.mu.Lock()
	p.waiting = true
	p.pauseLocked()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiting = false
		p.maybeResumeLocked()
		p.mu.Unlock()
	}()
	for {
		d := time.Until(t)
		if d <= 0 {
			return !p.isHalted()
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-p.halted:
			timer.Stop()
			return false
		}
	}
}

// markDone records that r is done: its offset may be committed.
func (p *partition) markDone(r *kgo.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
}

// uncommitted returns the offset to commit, the watermark (watermarkLocked),
// when it moved since the last commit.
func (p *partition) uncommitted() (kgo.EpochOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wm := p.watermarkLocked()
	return wm, wm.Offset > p.committed
}

// committedUpTo records a successful commit of offset.
func (p *partition) committedUpTo(offset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.committed = max(p.committed, offset)
}

// process handles r until it is done (true) or the worker is halted before
// that (false; r is left for whoever consumes the partition next): it
// waits for r's due time, runs it through the pipeline and settles the
// decision.
func (p *partition) process(r *kgo.Record) bool {
	d, story := p.newDelivery(r)
	var due time.Time
	if story { // x-redrive-due-at is one of redrive's headers
		due = wire.ParseTime(d.Header(driver.HeaderDueAt))
	}
	if !due.IsZero() && !p.sleepUntil(due) {
		return false
	}
	in := driver.Input{Born: d.Timestamp}
	if due.After(in.Born) {
		in.Born = due
	}
	if p.pipe.Counts() { // the key is only built when claims are counted
		in.ClaimKey = driver.ClaimKey(p.c.sub.Group, r.Topic, strconv.FormatInt(int64(r.Partition), 10), strconv.FormatInt(r.Offset, 10))
	}
	dec := p.pipe.Process(p.ctx, d, p.gated, in)
	done, sent := p.settle(r, d, dec)
	if done && !sent && p.pipe.Counts() { // a copy in flight releases when acknowledged
		p.pipe.Release(context.WithoutCancel(p.ctx), dec)
	}
	return done
}

// settle executes dec, the pipeline's decision about r (delivered as d),
// until r is done (true) or the worker is halted before that (false). A
// blocking retry waits here and runs the handler again. A retry or
// dead-letter copy is sent (see send): r counts as done while the copy is
// in flight, and sent is true, but the commit watermark stays at r until
// the broker acknowledges the copy, which then releases dec's claim.
//
// The handler gets d itself, not a copy (a copy of the delivery and of its
// headers per call was a measurable part of consuming). A handler may
// change it, so after a failure d is built again from r, as delivered:
// with the story of the last in-place retry when there was one (last).
func (p *partition) settle(r *kgo.Record, d *broker.Delivery, dec driver.Decision) (done, sent bool) {
	first := dec // holds the claim, if any
	var last *inPlace
	for {
		switch dec.Action {
		case driver.ActionAck:
			return true, false
		case driver.ActionStop:
			return false, false
		}
		if dec.Cause != nil { // the handler ran
			d = p.c.delivery(r)
			if last != nil {
				last.apply(d)
			}
		}
		switch dec.Action {
		case driver.ActionDeadLetter:
			return p.deadLetter(r, d, dec, first), true
		case driver.ActionRequeue:
			if !p.handBack() {
				return false, false
			}
			dec = p.pipe.Process(p.ctx, d, p.gated, driver.Input{})
			continue
		}
		if p.c.sub.RetryMode == broker.NonBlocking {
			return p.retryLater(r, d, dec, first), true
		}
		last = &inPlace{attempt: d.Attempt, first: d.FirstFailureAt, o: dec.Outcome, at: dec.At}
		if !p.retryInPlace(d, last) {
			return false, false
		}
		dec = p.pipe.Process(p.ctx, d, p.gated, driver.Input{})
	}
}

// gate is the handler as the pipeline calls it: it runs the handler when a
// concurrency slot is free, and returns driver.ErrStopped, without
// calling it, when the worker is halted first.
func (p *partition) gate(ctx context.Context, d *broker.Delivery) error {
	if !p.c.slots.take(p.halted) {
		return driver.ErrStopped
	}
	defer p.c.slots.give()
	if p.isHalted() {
		return driver.ErrStopped
	}
	return p.c.h(ctx, d)
}
