package kafka

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
)

// TestSlotsBound runs workers that take and give back slots as fast as
// they can, some giving up on a stop: never more holders than slots, and
// every slot free again at the end, none lost or made twice.
func TestSlotsBound(t *testing.T) {
	for _, tc := range []struct {
		name             string
		slots, workers   int
		rounds, stopEach int
	}{
		{"one slot", 1, 8, 2000, 0},
		{"fewer slots than workers", 3, 12, 2000, 0},
		{"as many as workers", 4, 4, 2000, 0},
		{"stops while waiting", 2, 10, 2000, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlots(tc.slots)
			var holders, most, taken, stopped atomic.Int64
			closed := make(chan struct{})
			close(closed)
			var wg sync.WaitGroup
			for w := range tc.workers {
				wg.Go(func() {
					for i := range tc.rounds {
						var stop <-chan struct{}
						if tc.stopEach > 0 && (i+w)%tc.stopEach == 0 {
							stop = closed
						}
						if !s.take(stop) {
							stopped.Add(1)
							continue
						}
						taken.Add(1)
						h := holders.Add(1)
						for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
						}
						holders.Add(-1)
						s.give()
					}
				})
			}
			waitGroup(t, &wg)
			if m := most.Load(); m > int64(tc.slots) {
				t.Errorf("%d handlers at once, bound %d", m, tc.slots)
			}
			if got := taken.Load() + stopped.Load(); got != int64(tc.workers*tc.rounds) {
				t.Errorf("taken %d + stopped %d = %d, want %d", taken.Load(), stopped.Load(), got, tc.workers*tc.rounds)
			}
			if tc.stopEach == 0 && stopped.Load() != 0 {
				t.Errorf("%d takes gave up without a stop", stopped.Load())
			}
			if f, w := s.free.Load(), s.waiting.Load(); f != int64(tc.slots) || w != 0 || len(s.line) != 0 {
				t.Errorf("at the end: %d free, %d waiting, %d in line; want %d, 0, 0", f, w, len(s.line), tc.slots)
			}
		})
	}
}

// TestSlotsFirstComeFirstServed: with the only slot held, two workers
// wait; each slot given back goes to the one that waited longest, and a
// newcomer does not take it past them.
func TestSlotsFirstComeFirstServed(t *testing.T) {
	s := newSlots(1)
	if !s.take(nil) {
		t.Fatal("take of a free slot failed")
	}
	got := make(chan string, 3)
	waiter := func(name string, inLine int64) {
		go func() {
			if s.take(nil) {
				got <- name
			}
		}()
		awaitWaiting(t, s, inLine)
	}
	waiter("a", 1)
	waiter("b", 2)
	s.give()
	if w := next(t, got); w != "a" {
		t.Fatalf("first slot given back went to %s, want a", w)
	}
	waiter("c", 2) // behind b
	s.give()       // a's
	if w := next(t, got); w != "b" {
		t.Fatalf("second slot went to %s, want b", w)
	}
	s.give() // b's
	if w := next(t, got); w != "c" {
		t.Fatalf("third slot went to %s, want c", w)
	}
	s.give() // c's
	if f := s.free.Load(); f != 1 {
		t.Fatalf("%d free at the end, want 1", f)
	}
}

// TestSlotsStopWhileWaiting: a worker in line that is stopped leaves the
// line and takes nothing; the slot given back afterwards is free for the
// next one.
func TestSlotsStopWhileWaiting(t *testing.T) {
	s := newSlots(1)
	s.take(nil)
	stop := make(chan struct{})
	res := make(chan bool, 1)
	go func() { res <- s.take(stop) }()
	awaitWaiting(t, s, 1)
	close(stop)
	if next(t, res) {
		t.Fatal("a stopped take reported a slot")
	}
	if w := s.waiting.Load(); w != 0 || len(s.line) != 0 {
		t.Fatalf("%d waiting, %d in line after the stop, want none", w, len(s.line))
	}
	s.give()
	if !s.take(stop) { // a free slot is taken even with stop closed
		t.Fatal("the slot given back was not free")
	}
}

// TestSlotsInterleavings sets up the moments between give's two steps
// (the slot counted free; the line not yet served) that the stress test
// above only hits by chance.
func TestSlotsInterleavings(t *testing.T) {
	t.Run("joining the line while a slot is free takes it", func(t *testing.T) {
		// A worker whose take saw no free slot, then a give that saw
		// nobody in line: the worker must not wait for a give to come.
		s := newSlots(1)
		s.take(nil)
		s.free.Add(1) // give's first step; waiting was 0, so it is done
		took := make(chan bool, 1)
		go func() { took <- s.wait(nil) }()
		if !next(t, took) {
			t.Fatal("wait returned without the slot")
		}
		if f := s.free.Load(); f != 0 {
			t.Fatalf("%d free after the take, want 0", f)
		}
	})
	t.Run("a newcomer does not pass the line", func(t *testing.T) {
		s := newSlots(1)
		s.take(nil)
		got := make(chan string, 2)
		go func() {
			if s.take(nil) {
				got <- "first"
			}
		}()
		awaitWaiting(t, s, 1)
		s.free.Add(1) // give's first step, the line not yet served
		go func() {
			if s.take(nil) {
				got <- "newcomer"
			}
		}()
		awaitWaiting(t, s, 2)
		s.mu.Lock() // give's second step
		s.handOutLocked()
		s.mu.Unlock()
		if w := next(t, got); w != "first" {
			t.Fatalf("the slot went to the %s, want the first in line", w)
		}
		s.give()
		if w := next(t, got); w != "newcomer" {
			t.Fatalf("then to %s, want the newcomer", w)
		}
	})
}

// awaitWaiting waits until n workers are in s's line.
func awaitWaiting(t *testing.T, s *slots, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.waiting.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers in line after 5s, want %d", s.waiting.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// next receives from c within 5 s: a slot never handed on, or a worker
// that never exits, fails the test instead of hanging it.
func next[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing after 5s: a slot not handed on, or a worker still running")
		panic("unreachable")
	}
}

// waitGroup waits for wg within 30 s.
func waitGroup(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	next(t, done)
}

// TestHaltedWorkerLeavesTheLine: a partition worker waiting in line for
// the only slot (taken here) exits when halted (its partition revoked,
// the consumer stopping), without the slot and without calling the
// handler; the slot given back afterwards is free.
func TestHaltedWorkerLeavesTheLine(t *testing.T) {
	cfg := Config{Brokers: []string{"unused:9092"}, InstanceID: "test"}.withDefaults()
	cfg.MaxBuffered, cfg.MaxBufferedBytes = 1<<20, 1<<30 // never paused: no client here
	br := &Broker{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	sub := broker.Subscription{Topic: "t", Group: "g", Concurrency: 1}.WithDefaults()
	c := newConsumer(br, sub, br.log)
	c.hctx = t.Context()
	var calls atomic.Int64
	c.h = func(context.Context, *broker.Delivery) error { calls.Add(1); return nil }
	if !c.slots.take(nil) {
		t.Fatal("take of the only slot failed")
	}
	p := newPartition(c, "t", 0)
	p.push([]*kgo.Record{{Topic: "t", Offset: 0}, {Topic: "t", Offset: 1}}, 2)
	go p.run()
	awaitWaiting(t, c.slots, 1)
	p.halt()
	next(t, p.exited)
	if n := calls.Load(); n != 0 {
		t.Errorf("the handler ran %d times without a slot", n)
	}
	if f, w := c.slots.free.Load(), c.slots.waiting.Load(); f != 0 || w != 0 {
		t.Errorf("after the halt: %d free, %d waiting; want 0 and 0 (the slot still ours)", f, w)
	}
	if eo, ok := p.uncommitted(); ok {
		t.Errorf("offset %d marked done though no record was handled", eo.Offset)
	}
	c.slots.give()
	if !c.slots.take(nil) {
		t.Error("the slot given back is not free")
	}
}
