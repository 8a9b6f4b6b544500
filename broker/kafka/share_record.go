package kafka

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// sharePhase is where a record a member took stands.
type sharePhase uint8

const (
	phaseQueued  sharePhase = iota // waiting for a handler goroutine
	phaseRunning                   // in the pipeline
	phaseHeld                      // waiting out a back-off (or its due time) under its lock
	phaseCopying                   // its retry or dead-letter copy is being written
	phaseSettled                   // acknowledged (ACCEPT or RELEASE): the member forgot it
)

// shareRecord is one record a member of the share group took, from its
// poll until it is settled.
type shareRecord struct {
	m *shareMember
	r *kgo.Record
	// d is the record's first delivery, built when it is first processed
	// (filled); the handler's later attempts get fresh ones.
	d      broker.Delivery
	filled bool
	// due is when a record published with PublishDelayed is due (zero
	// otherwise).
	due time.Time
	// runs counts the pipeline's runs: the first checks the message's
	// age and the broker's delivery count.
	runs int
	// last is the story of the last retry held in place, applied to the
	// record's next delivery.
	last *inPlace
	// next is the record's next delivery, last applied, when the failure
	// that held it built one (a requeue builds it again).
	next *broker.Delivery

	// Guarded by m.mu.
	phase sharePhase
	// renewed is when the record's lock was last known to start: the
	// poll, then each renewal the broker confirmed.
	renewed time.Time
	timer   *time.Timer // a hold's
}

// settle acknowledges sr with status (AckAccept or AckRelease) and tells
// its member, which polls again once all it took is settled. Only the
// first call counts.
func (sr *shareRecord) settle(status kgo.AckStatus) {
	if sr.m.forget(sr) {
		sr.r.Ack(status)
	}
}

// process runs sr through the pipeline and settles the decision: the
// first time, once the record is due (a delayed publish), with the
// message's age and the broker's delivery count checked; then, after a
// back-off held in place or a requeue, with the story of the last retry.
func (c *shareConsumer) process(sr *shareRecord) {
	if c.isStopping() {
		sr.settle(kgo.AckRelease)
		return
	}
	sr.m.setPhase(sr, phaseRunning)
	var (
		d  *broker.Delivery
		in driver.Input
	)
	if sr.runs == 0 {
		if !sr.filled {
			sr.filled = true
			if c.rc.fill(&sr.d, sr.r, c.sub.HeadersOnDemand) { // x-redrive-due-at is one of redrive's headers
				sr.due = wire.ParseTime(sr.d.Header(driver.HeaderDueAt))
			}
			sr.d.Redelivered = sr.r.DeliveryCount() > 1
		}
		if wait := untilDue(sr.due); wait > 0 {
			if c.holds(sr, wait) {
				c.hold(sr, sr.due)
			} else {
				c.send(sr, c.deferred(sr.r, &sr.d), "delayed")
			}
			return
		}
		d = &sr.d
		in = driver.Input{Born: d.Timestamp, NativeClaims: int64(sr.r.DeliveryCount())}
		if sr.due.After(in.Born) {
			in.Born = sr.due
		}
	} else if sr.next != nil {
		d, sr.next = sr.next, nil
	} else {
		d = c.rc.delivery(sr.r)
		if sr.last != nil {
			sr.last.apply(d)
		}
	}
	sr.runs++
	c.settle(sr, d, c.pipe.Process(c.hctx, d, c.gate, in))
}

// untilDue is how long until due; 0 for a zero due (no time read).
func untilDue(due time.Time) time.Duration {
	if due.IsZero() {
		return 0
	}
	return time.Until(due)
}

// settle executes dec, the pipeline's decision about sr (delivered as d).
// After a failure the copies and the next attempt are built from the
// record as delivered, with the story of the last retry held in place
// (the handler may have changed d).
func (c *shareConsumer) settle(sr *shareRecord, d *broker.Delivery, dec driver.Decision) {
	switch {
	case dec.Action == driver.ActionAck:
		sr.settle(kgo.AckAccept)
		return
	case dec.Action == driver.ActionStop || sr.m.abandoned():
		sr.settle(kgo.AckRelease)
		return
	}
	if dec.Cause != nil { // the handler ran
		d = c.rc.delivery(sr.r)
		if sr.last != nil {
			sr.last.apply(d)
		}
	}
	switch dec.Action {
	case driver.ActionDeadLetter:
		c.deadLetter(sr, d, dec)
	case driver.ActionRequeue: // handled again in place, same attempt: a RELEASE would count a delivery
		c.hold(sr, time.Now().Add(requeuePause))
	case driver.ActionRetry:
		if c.holds(sr, dec.Outcome.Delay) {
			sr.last = &inPlace{attempt: d.Attempt, first: d.FirstFailureAt, o: dec.Outcome, at: dec.At}
			if dec.Cause != nil { // d is the fresh delivery built above: the next one, once the story applied
				sr.last.apply(d)
				sr.next = d
			}
			c.hold(sr, dec.At.Add(dec.Outcome.Delay))
			return
		}
		c.send(sr, c.rc.retryRecord(sr.r, d, dec.Outcome, dec.At), "retry")
	}
}

// holds reports whether a wait of d is waited out holding sr (under its
// lock), rather than in the retry topic: d within Config.ShareMaxHold, by
// default shorter than the lock the broker grants.
func (c *shareConsumer) holds(sr *shareRecord, d time.Duration) bool {
	if c.maxHold > 0 {
		return d <= c.maxHold
	}
	return d < sr.m.lockDuration()
}

// hold keeps sr, its lock renewed, until until, then hands it to a
// handler again; the handler slot is free meanwhile. A stopping consumer
// gives it back instead.
func (c *shareConsumer) hold(sr *shareRecord, until time.Time) {
	sr.m.hold(sr, until, func() { c.dispatch(sr) })
}

// deadLetter writes sr's <topic>.dlq envelope (saying the record came
// from a share group, and its delivery count) and ACCEPTs sr once the
// broker acknowledged it.
func (c *shareConsumer) deadLetter(sr *shareRecord, d *broker.Delivery, dec driver.Decision) {
	e := deadLetterEntry(sr.r, d, dec.Outcome, dec.Cause, dec.At)
	e.GroupType, e.DeliveryCount = GroupTypeShare, int(sr.r.DeliveryCount())
	rec, err := c.rc.envelopeRecord(sr.r, d, dec.Outcome, dec.At, e)
	if err != nil {
		// Nothing to write, and dropping the message is not an option:
		// hold the record (its lock renewed) until the consumer stops,
		// loudly.
		c.log.Error("cannot encode dead-letter envelope; record held until the consumer stops", "partition", sr.r.Partition, "offset", sr.r.Offset, "error", err)
		sr.m.hold(sr, time.Time{}, nil)
		return
	}
	c.send(sr, rec, "dead-letter")
}

// deferred is the copy of a delayed record (delivered as d) whose due
// time is beyond what is held in place: to the retry topic, with its
// headers as they are (x-redrive-due-at included) and where it was first
// published; the retry topic's consumer handles it when due.
func (c *shareConsumer) deferred(r *kgo.Record, d *broker.Delivery) *kgo.Record {
	hs := append(make([]kgo.RecordHeader, 0, len(r.Headers)+3), r.Headers...)
	if _, ok := d.LookupHeader(headerOriginPartition); !ok {
		hs = append(hs,
			kgo.RecordHeader{Key: headerOriginPartition, Value: []byte(strconv.FormatInt(int64(r.Partition), 10))},
			kgo.RecordHeader{Key: headerOriginOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))})
	}
	if _, ok := d.LookupHeader(headerOriginTimestamp); !ok {
		hs = append(hs, kgo.RecordHeader{Key: headerOriginTimestamp, Value: []byte(wire.FormatTime(r.Timestamp))})
	}
	return &kgo.Record{Topic: c.rc.retryTopic, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: time.Now()}
}

// send writes rec, sr's retry, delayed or dead-letter copy, and ACCEPTs
// sr once the broker acknowledged it. A refused write is tried again with
// back-off (sr's lock renewed meanwhile); once the consumer stops, a
// refused write gives sr back instead (the copy may exist: at least once).
func (c *shareConsumer) send(sr *shareRecord, rec *kgo.Record, what string) {
	sr.m.setPhase(sr, phaseCopying)
	backoff := c.b.cfg.WriteRetryBackoff
	var produce func()
	produce = func() {
		// A fresh record each time: franz-go keeps the context of the
		// first produce in the record.
		r := *rec
		ctx, cancel := context.WithTimeout(c.hctx, c.b.cfg.DeliveryTimeout)
		c.b.prod.Produce(ctx, &r, func(_ *kgo.Record, err error) {
			cancel()
			if err == nil {
				sr.settle(kgo.AckAccept)
				return
			}
			if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
				err = errors.Join(broker.ErrTooLarge, err)
			}
			if c.isStopping() {
				c.log.Warn("cannot write "+what+" copy while stopping; record given back", "to", rec.Topic, "offset", sr.r.Offset, "error", err)
				sr.settle(kgo.AckRelease)
				return
			}
			c.log.Warn("cannot write "+what+" copy; will try again, record held", "to", rec.Topic, "offset", sr.r.Offset, "error", err, "backoff", backoff)
			wait := backoff
			backoff = min(2*backoff, DefaultMaxWriteBackoff)
			time.AfterFunc(wait, produce)
		})
	}
	produce()
}
