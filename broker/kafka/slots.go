package kafka

import (
	"sync"
	"sync/atomic"
)

// slots bounds the handlers a consumer's partition workers run at once
// (Subscription.Concurrency). While nobody waits, taking and giving back
// a slot is a compare-and-swap and an add: the channel it replaces took
// its lock twice per record, a fifth of a worker's own cost per record
// when the workers of a few partitions shared it. A worker that finds no
// slot free waits in line, first come first served, and is handed the
// next slot given back; nobody takes a free slot past a worker in line.
type slots struct {
	free    atomic.Int64 // slots nobody holds (or is handed)
	waiting atomic.Int64 // len(line), read without mu by take and give

	mu   sync.Mutex
	line []chan struct{} // the waiting workers, each closed when handed a slot
}

func newSlots(n int) *slots {
	s := &slots{}
	s.free.Store(int64(n))
	return s
}

// take takes a slot, waiting for one when none is free, and reports
// whether it did: false when stop was closed first.
func (s *slots) take(stop <-chan struct{}) bool {
	if s.waiting.Load() == 0 && s.grab() {
		return true
	}
	return s.wait(stop)
}

// give gives back a slot that take took, to the first worker in line if
// there is one.
func (s *slots) give() {
	s.free.Add(1)
	// A worker that joins the line after this load saw the slot free
	// when it joined (wait grabs it then): free and waiting are both
	// sequentially consistent, so one of the two sees the other.
	if s.waiting.Load() == 0 {
		return
	}
	s.mu.Lock()
	s.handOutLocked()
	s.mu.Unlock()
}

// grab takes a free slot, if any.
func (s *slots) grab() bool {
	for n := s.free.Load(); n > 0; n = s.free.Load() {
		if s.free.CompareAndSwap(n, n-1) {
			return true
		}
	}
	return false
}

// wait joins the line and waits to be handed a slot, or for stop.
func (s *slots) wait(stop <-chan struct{}) bool {
	s.mu.Lock()
	s.waiting.Add(1)
	if len(s.line) == 0 && s.grab() {
		s.waiting.Add(-1)
		s.mu.Unlock()
		return true
	}
	ready := make(chan struct{})
	s.line = append(s.line, ready)
	s.mu.Unlock()
	select {
	case <-ready:
		return true
	case <-stop:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ready: // handed one while stopping: pass it on
		s.free.Add(1)
		s.handOutLocked()
		return false
	default:
	}
	for i, w := range s.line {
		if w == ready {
			s.line = append(s.line[:i], s.line[i+1:]...)
			s.waiting.Add(-1)
			break
		}
	}
	return false
}

// handOutLocked hands free slots to the workers in line, first first.
// s.mu is held.
func (s *slots) handOutLocked() {
	for len(s.line) > 0 && s.grab() {
		close(s.line[0])
		s.line[0] = nil
		s.line = s.line[1:]
		s.waiting.Add(-1)
	}
}
