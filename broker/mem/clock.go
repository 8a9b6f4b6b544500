package mem

import (
	"sync"
	"time"
)

// Clock is a clock a test moves by hand: a Server on it delivers a
// delayed message or a retry only once the clock reached its due time,
// and its pipelines decide, age messages (Subscription.MaxAge) and count
// the retry policy's elapsed budget on it, so that a test of a back-off
// of hours takes no time and never sleeps. The zero Clock is not usable:
// make one with NewClock. Its methods are safe for concurrent use.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	moved []func() // the servers on this clock, woken after each move
}

// NewClock returns a Clock that reads start; a zero start is the wall
// clock's time now, to the second.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Now().Truncate(time.Second)
	}
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward (a negative d does nothing) and makes
// the messages that are now due deliverable: they are handled after
// Advance returns; Server.Idle waits for them.
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	moved := c.moved
	c.mu.Unlock()
	for _, f := range moved {
		f()
	}
}

// AdvanceTo moves the clock forward to t; a t not after the clock's time
// does nothing.
func (c *Clock) AdvanceTo(t time.Time) { c.Advance(t.Sub(c.Now())) }

// onMove calls f after every move of the clock.
func (c *Clock) onMove(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moved = append(c.moved, f)
}
