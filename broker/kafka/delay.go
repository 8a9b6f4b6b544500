package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// dueAt returns now+delay rounded up to the millisecond, the precision of
// the x-redrive-due-at header, so that the due time read back is never
// earlier than asked.
func dueAt(now time.Time, delay time.Duration) time.Time {
	t := now.Add(delay)
	if r := t.Truncate(time.Millisecond); r.Before(t) {
		return r.Add(time.Millisecond)
	}
	return t
}

// slot is a record of the retry topic held by runByDue.
type slot struct {
	r    *kgo.Record
	due  time.Time
	done bool
}

// runByDue is the worker of a retry topic partition. Records there wait
// for different back-offs, so the worker holds up to Config.MaxBuffered of
// them and handles whichever is due first, rather than letting a record due
// in an hour hold one due in a second. The committed offset only moves past
// records that are done, in offset order. When the buffer is full of records
// not yet due, fetching the partition pauses until some are done: beyond the
// buffer, a later record waits for the ones ahead of it.
func (p *partition) runByDue() {
	var pending []*slot // in offset order
	for {
		if !p.settleCopies(0) {
			return
		}
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		for _, r := range p.queue {
			pending = append(pending, &slot{r: r, due: wire.ParseTime(headerValue(r, driver.HeaderDueAt))})
		}
		clear(p.queue)
		p.queue = p.queue[:0]
		p.held = len(pending)
		p.tookLocked()
		p.mu.Unlock()

		next := earliestDue(pending)
		if next == nil {
			select {
			case <-p.wake:
			case <-p.halted:
				return
			}
			continue
		}
		if wait := time.Until(next.due); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-p.wake:
				timer.Stop()
			case <-p.halted:
				timer.Stop()
				return
			}
			continue
		}
		if !p.c.proc(p, next.r) {
			return
		}
		next.done = true
		p.mu.Lock()
		p.bytes -= recordBytes(next.r)
		p.mu.Unlock()
		var last *slot
		for len(pending) > 0 && pending[0].done {
			last = pending[0]
			pending[0] = nil
			pending = pending[1:]
		}
		if last != nil {
			p.markDone(last.r)
		}
	}
}

// earliestDue returns the slot not done that is due first (the lowest offset
// among equals), nil when all are done.
func earliestDue(pending []*slot) *slot {
	var best *slot
	for _, s := range pending {
		if !s.done && (best == nil || s.due.Before(best.due)) {
			best = s
		}
	}
	return best
}

// headerValue returns the value of r's header name, "" when absent.
func headerValue(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}
