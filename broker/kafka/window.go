package kafka

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// maxCopiesInFlight bounds the retry and dead-letter copies one partition
// has written and not yet seen acknowledged (its in-flight window); the
// window is also bounded by Config.MaxBufferedBytes of copies.
const maxCopiesInFlight = 256

// inFlight is one retry or dead-letter copy written without waiting for
// the broker: its source record stays uncommitted until it is acknowledged.
type inFlight struct {
	rec    *kgo.Record // the copy
	what   string      // "retry" or "dead-letter", for logs
	offset int64       // the source record's offset and leader epoch
	epoch  int32
	bytes  int
	dec    driver.Decision // released once the copy is acknowledged
	err    error           // set when the write failed: the worker writes it again
}

// send writes rec, the retry or dead-letter copy of r (decided by dec),
// without waiting for the broker's acknowledgement: the worker goes on with
// the partition while the copy is in flight, and the commit watermark
// (uncommitted) stays at r's offset until it is acknowledged. When the
// window is full (maxCopiesInFlight copies or Config.MaxBufferedBytes) it
// first waits for room. It returns false when the worker is halted first.
func (p *partition) send(r, rec *kgo.Record, what string, dec driver.Decision) bool {
	w := &inFlight{rec: rec, what: what, offset: r.Offset, epoch: r.LeaderEpoch, bytes: recordBytes(rec), dec: dec}
	if !p.settleCopies(w.bytes) {
		return false
	}
	p.mu.Lock()
	p.copies = append(p.copies, w)
	p.copyBytes += w.bytes
	p.inWindow.Add(1)
	p.mu.Unlock()
	p.produceAsync(w)
	return true
}

// produceAsync produces w's copy; copyDone runs when the broker answered.
func (p *partition) produceAsync(w *inFlight) {
	// A fresh record each time: franz-go keeps the context of the first
	// produce in the record.
	r := *w.rec
	ctx, cancel := context.WithTimeout(p.ctx, p.c.b.cfg.DeliveryTimeout)
	p.c.b.prod.Produce(ctx, &r, func(_ *kgo.Record, err error) {
		cancel()
		p.copyDone(w, err)
	})
}

// copyDone records the broker's answer about w: acknowledged, it leaves the
// window (the watermark may move past its source); refused, it stays, marked
// failed, for the worker to write again (settleCopies).
func (p *partition) copyDone(w *inFlight, err error) {
	if err != nil && (errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)) {
		err = errors.Join(broker.ErrTooLarge, err)
	}
	p.mu.Lock()
	if err != nil {
		w.err = err
	} else {
		p.dropCopyLocked(w)
	}
	p.mu.Unlock()
	if err == nil && p.pipe.Counts() {
		go p.pipe.Release(context.WithoutCancel(p.ctx), w.dec)
	}
	select {
	case p.settled <- struct{}{}:
	default:
	}
	select { // a worker waiting for records retries the failed copy
	case p.wake <- struct{}{}:
	default:
	}
}

// dropCopyLocked removes w from the window. p.mu is held.
func (p *partition) dropCopyLocked(w *inFlight) {
	if i := slices.Index(p.copies, w); i >= 0 {
		p.copies = slices.Delete(p.copies, i, i+1)
		p.copyBytes -= w.bytes
		p.inWindow.Add(-1)
	}
}

// settleCopies writes again, one by one and with back-off, the copies the
// broker refused (the partition waits meanwhile, as when a write fails
// synchronously), then waits until the window has room for need more
// bytes. It returns false when the worker is halted first.
func (p *partition) settleCopies(need int) bool {
	if p.inWindow.Load() == 0 { // the usual case, without taking p.mu
		return true
	}
	for {
		p.mu.Lock()
		var failed *inFlight
		for _, w := range p.copies {
			if w.err != nil {
				failed = w
				break
			}
		}
		full := len(p.copies) > 0 && (len(p.copies) >= maxCopiesInFlight || p.copyBytes+need > p.c.b.cfg.MaxBufferedBytes)
		p.mu.Unlock()
		if failed != nil {
			backoff := p.c.b.cfg.WriteRetryBackoff
			p.logWriteFailure(failed.rec, failed.what, failed.err, backoff)
			if !p.backOff(&backoff) || !p.writeFrom(failed.rec, failed.what, backoff) {
				return false
			}
			p.mu.Lock()
			p.dropCopyLocked(failed)
			p.mu.Unlock()
			if p.pipe.Counts() {
				p.pipe.Release(context.WithoutCancel(p.ctx), failed.dec)
			}
			continue
		}
		if !full {
			return true
		}
		select {
		case <-p.settled:
		case <-p.halted:
			return false
		}
	}
}

// awaitCopies waits, once the worker is halted, until no copy is in flight
// any more (each acknowledged or refused), so that the last commit carries
// what was acknowledged; a stop that gives up cancels the worker's context,
// which fails the copies not yet acknowledged.
func (p *partition) awaitCopies() {
	for {
		p.mu.Lock()
		pending := slices.ContainsFunc(p.copies, func(w *inFlight) bool { return w.err == nil })
		p.mu.Unlock()
		if !pending {
			return
		}
		<-p.settled
	}
}

// watermarkLocked is the offset to commit: the lowest source offset whose
// copy is not yet acknowledged, else the offset after the last record done
// (in offset order: with none done yet, there is nothing to commit). p.mu is
// held.
func (p *partition) watermarkLocked() kgo.EpochOffset {
	wm := p.done
	for _, w := range p.copies {
		if w.offset < wm.Offset {
			wm = kgo.EpochOffset{Epoch: w.epoch, Offset: w.offset}
		}
	}
	return wm
}

// writeFrom produces rec (a retry or dead-letter copy the broker refused
// once) until the broker acknowledges it, waiting backoff, then doubling it,
// between attempts. It returns false when the worker is halted before that;
// the source record then stays uncommitted.
func (p *partition) writeFrom(rec *kgo.Record, what string, backoff time.Duration) bool {
	for {
		// A fresh record each time: franz-go keeps the context of the
		// first produce in the record.
		r := *rec
		ctx, cancel := context.WithTimeout(p.ctx, p.c.b.cfg.DeliveryTimeout)
		err := p.c.b.produce(ctx, &r)
		cancel()
		if err == nil {
			return true
		}
		p.logWriteFailure(rec, what, err, backoff)
		if !p.backOff(&backoff) {
			return false
		}
	}
}

// logWriteFailure logs that the what copy rec was refused with err and is
// written again after backoff.
func (p *partition) logWriteFailure(rec *kgo.Record, what string, err error, backoff time.Duration) {
	if errors.Is(err, broker.ErrTooLarge) {
		p.log.Error("the "+what+" copy is over the topic's max.message.bytes; raise it (redrive topology apply sets it on DLQ topics) - the partition waits, source offset uncommitted",
			"to", rec.Topic, "error", err, "backoff", backoff)
		return
	}
	p.log.Warn("cannot write "+what+" copy; will try again, source offset stays uncommitted",
		"to", rec.Topic, "error", err, "backoff", backoff)
}

// backOff waits *backoff, then doubles it up to DefaultMaxWriteBackoff. It
// returns false when the worker is halted first.
func (p *partition) backOff(backoff *time.Duration) bool {
	timer := time.NewTimer(*backoff)
	select {
	case <-timer.C:
	case <-p.halted:
		timer.Stop()
		return false
	}
	*backoff = min(2**backoff, DefaultMaxWriteBackoff)
	return true
}
