package mem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Idle waits until the server is idle: no message is in a handler (or
// being moved to its retry or dead-letter queue) and no due message
// waits in the queue of a worker someone consumes or consumed, nor in a
// DLQ a keeper reads or read (Broker.ConsumeDeadLetters). Messages
// whose delay or back-off has not ended on the server's clock do not
// count (advance the Clock, or use Drain). It returns an error naming
// what is still busy when ctx ends first.
//
// A Consume started in another goroutine counts from when it runs: start
// consumers with Broker.Start, which counts its consumer before it
// returns, or Idle may find nothing to wait for yet.
func (s *Server) Idle(ctx context.Context) error {
	for {
		s.mu.Lock()
		s.promoteAll() // what the wall clock made due before its timer fired
		busy := s.busy()
		ch := s.changed
		s.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			what := s.describeBusy()
			s.mu.Unlock()
			return fmt.Errorf("mem: not idle: %s: %w", what, context.Cause(ctx))
		}
	}
}

// waits reports whether Idle waits for q's due messages: a worker's
// queue someone consumes or consumed, a DLQ a keeper reads or read.
func (q *queue) waits() bool { return q.consumed }

// busy reports whether something keeps the server from being idle; s.mu
// is held.
func (s *Server) busy() bool {
	for _, qs := range []map[string]*queue{s.queues, s.dlqs} {
		for _, q := range qs {
			if len(q.taken) > 0 || (q.waits() && q.hasDue()) {
				return true
			}
		}
	}
	return false
}

// describeBusy says what keeps the server from being idle; s.mu is held.
func (s *Server) describeBusy() string {
	var parts []string
	for _, qs := range []map[string]*queue{s.queues, s.dlqs} {
		for _, q := range qs {
			due := 0
			if q.waits() {
				due = q.due()
			}
			if due == 0 && len(q.taken) == 0 {
				continue
			}
			part := fmt.Sprintf("%s: %d in flight, %d due", q.name, len(q.taken), due)
			if q.consumers == 0 && due > 0 {
				part += " (no consumer running)"
			}
			parts = append(parts, part)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// Drain handles everything there is: it waits until the server is Idle,
// then, on a Clock, advances it to the next due time of a delayed message
// or retry of a consumed queue, and again, until none is left; on the
// wall clock it waits for them. It returns when the server is idle with
// nothing delayed, or an error when ctx ends first (a handler that never
// stops failing with a retry policy without end keeps it going).
func (s *Server) Drain(ctx context.Context) error {
	for {
		if err := s.Idle(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		var next time.Time
		for _, q := range s.queues {
			if d := q.nextDue(); q.consumed && !d.IsZero() && (next.IsZero() || d.Before(next)) {
				next = d
			}
		}
		ch := s.changed
		s.mu.Unlock()
		switch {
		case next.IsZero():
			return nil
		case s.clock != nil:
			s.clock.AdvanceTo(next)
		default:
			select {
			case <-ch:
			case <-ctx.Done():
				return fmt.Errorf("mem: draining, next message due at %s: %w", next.Format(time.RFC3339Nano), context.Cause(ctx))
			}
		}
	}
}
