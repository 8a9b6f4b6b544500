package kafka

import (
	"slices"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
)

// The buffer of fetched records a partition worker holds, and the
// pausing and resuming of fetching that bounds it.

// maxTake bounds the records the worker takes off its buffer at once (see
// take), and so the Deliveries of one slab (delivery.go's newDelivery):
// as many as fit the largest small allocation, 32 KiB (120 of 272 bytes;
// a slab past it is a large allocation, zeroed and swept on its own).
const maxTake = maxSmallAlloc / int(unsafe.Sizeof(broker.Delivery{}))

// maxSmallAlloc is the Go runtime's largest small object (size-classed,
// from a per-P cache).
const maxSmallAlloc = 32 << 10

// recordBytes is what r counts against Config.MaxBufferedBytes: its key,
// value and headers.
func recordBytes(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// push queues fetched records. A partition known to be slow has its
// fetching paused at once when its buffer is full; others are throttled by
// the poll loop (consumer.waitForRoom).
func (p *partition) push(recs []*kgo.Record, hwm int64) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	if p.first < 0 {
		p.first = recs[0].Offset
	}
	p.hwm = max(p.hwm, hwm)
	p.queue = append(p.queue, recs...)
	for _, r := range recs {
		p.bytes += recordBytes(r)
	}
	if p.slow && p.overLocked() {
		p.pauseFullLocked()
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take moves up to maxTake buffered records into out and returns it, or
// false once the worker is halted; none when a copy in flight was refused
// (see settleCopies). The records stay counted in the buffer (held, bytes)
// until finished, one by one, marks each done: taking them does not make
// room for more, and the commit watermark moves record by record.
func (p *partition) take(out []*kgo.Record) ([]*kgo.Record, bool) {
	for {
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return out, false
		}
		if len(p.queue) > 0 {
			n := min(len(p.queue), maxTake)
			out = append(out, p.queue[:n]...)
			clear(p.queue[:n])
			p.queue = p.queue[n:]
			p.held += n
			p.mu.Unlock()
			return out, true
		}
		refused := slices.ContainsFunc(p.copies, func(w *inFlight) bool { return w.err != nil })
		p.mu.Unlock()
		if refused {
			return out, true
		}
		select {
		case <-p.wake:
		case <-p.halted:
		}
	}
}

// finished records that r, a record take returned, is done: it leaves
// the buffer, which may make room for more (tookLocked), and its offset
// may be committed.
func (p *partition) finished(r *kgo.Record) {
	p.mu.Lock()
	p.held--
	p.bytes -= recordBytes(r)
	p.done = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
	p.tookLocked()
	p.mu.Unlock()
}

// halt makes the worker stop: no new record, waits abandoned.
func (p *partition) halt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		close(p.halted)
		p.c.signalRoom()
	}
}

func (p *partition) isHalted() bool {
	select {
	case <-p.halted:
		return true
	default:
		return false
	}
}

// overLocked reports whether the buffer is full: Config.MaxBuffered
// records or Config.MaxBufferedBytes bytes. p.mu is held.
func (p *partition) overLocked() bool {
	cfg := &p.c.b.cfg
	return len(p.queue)+p.held >= cfg.MaxBuffered || p.bytes >= cfg.MaxBufferedBytes
}

// halfLocked reports whether the buffer is at most half full (both
// bounds). p.mu is held.
func (p *partition) halfLocked() bool {
	cfg := &p.c.b.cfg
	return len(p.queue)+p.held <= cfg.MaxBuffered/2 && p.bytes <= cfg.MaxBufferedBytes/2
}

// tookLocked runs after the worker took records off its buffer: it tells
// a poll loop waiting for room, and resumes fetching when it can. p.mu is
// held.
func (p *partition) tookLocked() {
	if p.full && p.halfLocked() {
		p.full = false
		p.c.signalRoom()
	}
	p.maybeResumeLocked()
}

// pauseFullLocked pauses fetching because the buffer is full. p.mu is held.
func (p *partition) pauseFullLocked() {
	if p.paused || p.stopped {
		return
	}
	p.pauseLocked()
	p.pausedAt = time.Now()
}

// pauseLocked pauses fetching this partition. p.mu is held.
func (p *partition) pauseLocked() {
	if p.paused || p.stopped {
		return
	}
	p.paused = true
	p.c.cl.PauseFetchPartitions(map[string][]int32{p.topic: {p.part}})
}

// maybeResumeLocked resumes fetching when the worker neither waits nor
// holds more than half of its buffer. p.mu is held.
func (p *partition) maybeResumeLocked() {
	if !p.paused || p.stopped || p.waiting || !p.halfLocked() {
		return
	}
	if !p.pausedAt.IsZero() {
		// Drained from full to half quickly: not slow after all.
		if time.Since(p.pausedAt) < throttleWait {
			p.slow = false
		}
		p.pausedAt = time.Time{}
	}
	p.paused = false
	p.c.cl.ResumeFetchPartitions(map[string][]int32{p.topic: {p.part}})
}
