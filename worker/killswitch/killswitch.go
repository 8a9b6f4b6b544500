// Package killswitch is the state machine of a worker's kill switch: it
// watches the outcomes of a worker's handler calls and, when transient
// failures dominate a sliding window (the downstream is down, not the
// messages bad), trips: the worker stops taking messages instead of
// spending their retries and dead-lettering them. After a timeout it
// half-opens and lets one message through; success closes it, failure
// opens it again with the timeout doubled, up to a cap.
//
// The package decides only; the worker runtime (package worker) acts on its
// answers: it stops taking deliveries while the switch is not closed and
// hands back, without spending an attempt, a message that failed while the
// switch was tripping (broker.Requeue).
package killswitch

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// ErrInvalidConfig is wrapped by Config.Validate errors.
var ErrInvalidConfig = errors.New("killswitch: invalid config")

// Defaults applied by Config.WithDefaults.
const (
	DefaultActivation      = 20
	DefaultTripRatio       = 0.5
	DefaultWindow          = 30 * time.Second
	DefaultRestartAfter    = 30 * time.Second
	DefaultMaxRestartAfter = 5 * time.Minute
)

// buckets is the number of slots the window is counted in: the window
// slides by Window/buckets.
const buckets = 10

// Config configures a kill switch. The zero value is a disabled switch.
type Config struct {
	// Enabled turns the switch on; off, a worker retries and dead-letters
	// through an outage as its retry policy says.
	Enabled bool
	// Activation is the least number of counted calls (successes and
	// transient failures) in Window before the switch may trip. Default
	// 20, >= 1.
	Activation int
	// TripRatio trips the switch when transient failures / counted calls
	// in Window reach it. Default 0.5, in (0, 1].
	TripRatio float64
	// Window is the sliding window calls are counted in (by tenths).
	// Default 30s, >= 100ms.
	Window time.Duration
	// RestartAfter is how long a tripped switch stays open before it lets
	// one probe message through. Default 30s, > 0.
	RestartAfter time.Duration
	// MaxRestartAfter caps RestartAfter, which doubles each time a probe
	// fails. Default 5m, >= RestartAfter.
	MaxRestartAfter time.Duration
}

// WithDefaults returns c with unset (zero) fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Activation == 0 {
		c.Activation = DefaultActivation
	}
	if c.TripRatio == 0 {
		c.TripRatio = DefaultTripRatio
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.RestartAfter == 0 {
		c.RestartAfter = DefaultRestartAfter
	}
	if c.MaxRestartAfter == 0 {
		c.MaxRestartAfter = max(DefaultMaxRestartAfter, c.RestartAfter)
	}
	return c
}

// Validate reports the first problem of c (defaults applied), naming the
// field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Activation < 1:
		return fmt.Errorf("%w: activation %d is below 1", ErrInvalidConfig, c.Activation)
	case math.IsNaN(c.TripRatio) || c.TripRatio <= 0 || c.TripRatio > 1:
		return fmt.Errorf("%w: trip_ratio %v is not in (0, 1]", ErrInvalidConfig, c.TripRatio)
	case c.Window < 100*time.Millisecond:
		return fmt.Errorf("%w: window %s is below 100ms", ErrInvalidConfig, c.Window)
	case c.RestartAfter <= 0:
		return fmt.Errorf("%w: restart_after %s is not positive", ErrInvalidConfig, c.RestartAfter)
	case c.MaxRestartAfter < c.RestartAfter:
		return fmt.Errorf("%w: max_restart_after %s is below restart_after %s", ErrInvalidConfig, c.MaxRestartAfter, c.RestartAfter)
	}
	return nil
}

// State is where a switch is.
type State int

// States.
const (
	// Closed: messages flow; outcomes are counted.
	Closed State = iota
	// Open: tripped; no message is taken until the restart timeout ends.
	Open
	// HalfOpen: one probe message at a time is let through.
	HalfOpen
)

// String returns "closed", "open" or "half_open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Outcome is what became of one handler call, as the switch counts it.
type Outcome int

// Outcomes.
const (
	// Success: the handler returned nil.
	Success Outcome = iota
	// Transient: a failure worth retrying (the downstream may be down).
	Transient
	// Ignored: a failure that says nothing about the downstream
	// (Permanent, a non-retriable class, an expired message, a poison
	// pill) or a call that did not finish (shutdown). It is not counted.
	Ignored
)

// Transition is a change of state, reported by Allow and Record.
type Transition struct {
	From, To State
	// At is when it happened.
	At time.Time
	// Until is when an Open switch half-opens (zero otherwise).
	Until time.Time
	// Failures and Calls are the window's counts when the switch tripped.
	Failures, Calls int
}

// Changed reports whether t is a transition (From != To).
func (t Transition) Changed() bool { return t.From != t.To }

// Switch is one worker's kill switch. Its methods are safe for concurrent
// use.
type Switch struct {
	cfg Config
	now func() time.Time

	mu      sync.Mutex
	state   State
	slot    int64 // the number of the window slot now (now / slot length)
	calls   [buckets]int
	fails   [buckets]int
	until   time.Time     // Open: when it half-opens
	timeout time.Duration // the current restart timeout
	probing bool          // HalfOpen: the probe is in flight
	trips   int
}

// New returns a closed switch for cfg (defaults applied), or cfg's
// Validate error.
func New(cfg Config) (*Switch, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &Switch{cfg: cfg, now: time.Now, timeout: cfg.RestartAfter}, nil
}

// Config returns the switch's configuration, defaults applied.
func (s *Switch) Config() Config { return s.cfg }

// State returns the state and, when Open, when it half-opens.
func (s *Switch) State() (State, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.until
}

// Trips returns how many times the switch tripped (Closed or HalfOpen to
// Open).
func (s *Switch) Trips() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trips
}

// Allow asks to start one handler call. It reports whether the call may
// start; when not, wait is how long until asking again makes sense (the
// rest of the restart timeout, or a short poll while a probe is in
// flight). An Open switch whose timeout ended half-opens here (reported
// as a transition) and grants the probe. Every granted call must be
// followed by one Record.
func (s *Switch) Allow() (ok bool, wait time.Duration, t Transition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	switch s.state {
	case Closed:
		return true, 0, Transition{}
	case Open:
		if now.Before(s.until) {
			return false, s.until.Sub(now), Transition{}
		}
		t = s.moveLocked(HalfOpen, now)
		s.probing = true
		return true, 0, t
	default: // HalfOpen
		if s.probing {
			return false, probePoll(s.cfg.RestartAfter), Transition{}
		}
		s.probing = true
		return true, 0, Transition{}
	}
}

// probePoll is how long a caller refused during a probe waits before it
// asks again.
func probePoll(restart time.Duration) time.Duration {
	return min(max(restart/10, 10*time.Millisecond), 100*time.Millisecond)
}

// Record counts the outcome of a call Allow granted and returns the
// transition it caused, if any. While Open, outcomes of calls that started
// before the switch tripped are not counted.
func (s *Switch) Record(o Outcome) Transition {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	switch s.state {
	case Closed:
		if o == Ignored {
			return Transition{}
		}
		s.slideLocked(now)
		i := int(s.slot % buckets)
		s.calls[i]++
		if o == Transient {
			s.fails[i]++
		}
		calls, fails := s.sumLocked()
		if o == Transient && calls >= s.cfg.Activation && float64(fails) >= s.cfg.TripRatio*float64(calls) {
			t := s.openLocked(now, s.cfg.RestartAfter)
			t.Failures, t.Calls = fails, calls
			return t
		}
	case HalfOpen:
		if !s.probing {
			return Transition{}
		}
		s.probing = false
		switch o {
		case Success:
			s.timeout = s.cfg.RestartAfter
			s.calls, s.fails = [buckets]int{}, [buckets]int{}
			return s.moveLocked(Closed, now)
		case Transient:
			return s.openLocked(now, min(2*s.timeout, s.cfg.MaxRestartAfter))
		}
	}
	return Transition{}
}

// Failing reports whether a transient failure recorded now would find the
// switch not closed: the message that failed should go back without
// spending an attempt.
func (s *Switch) Failing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != Closed
}

func (s *Switch) openLocked(now time.Time, timeout time.Duration) Transition {
	s.timeout = timeout
	s.until = now.Add(timeout)
	s.trips++
	t := s.moveLocked(Open, now)
	t.Until = s.until
	return t
}

func (s *Switch) moveLocked(to State, now time.Time) Transition {
	t := Transition{From: s.state, To: to, At: now}
	s.state = to
	if to != Open {
		s.until = time.Time{}
	}
	return t
}

// slideLocked moves the window to now, emptying the slots it left.
func (s *Switch) slideLocked(now time.Time) {
	slot := now.UnixNano() / int64(s.cfg.Window/buckets)
	if slot <= s.slot {
		return
	}
	for n := s.slot + 1; n <= slot && n <= s.slot+buckets; n++ {
		s.calls[n%buckets], s.fails[n%buckets] = 0, 0
	}
	s.slot = slot
}

func (s *Switch) sumLocked() (calls, fails int) {
	for i := range buckets {
		calls += s.calls[i]
		fails += s.fails[i]
	}
	return calls, fails
}
