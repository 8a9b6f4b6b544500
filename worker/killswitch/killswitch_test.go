package killswitch

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Unix(1_700_000_000, 0)} }

// step is one action on a switch and what it must observe.
type step struct {
	advance time.Duration // move the clock first
	record  Outcome       // record this outcome n times (n > 0)
	n       int
	allow   bool // call Allow instead of Record
	// want: the state after the step; wantOK the Allow answer.
	want   State
	wantOK bool
	// wantUntil, when > 0, is the expected until - now of an Open switch.
	wantUntil time.Duration
}

func TestSwitch(t *testing.T) {
	cfg := Config{Enabled: true, Activation: 10, TripRatio: 0.5, Window: 10 * time.Second,
		RestartAfter: time.Second, MaxRestartAfter: 3 * time.Second}
	tests := []struct {
		name  string
		steps []step
		trips int
	}{
		{name: "activation: failures below activation do not trip", steps: []step{
			{record: Transient, n: 9, want: Closed},
			{allow: true, want: Closed, wantOK: true},
		}},
		{name: "activation reached with all failures trips", steps: []step{
			{record: Transient, n: 10, want: Open, wantUntil: time.Second},
			{allow: true, want: Open, wantOK: false},
		}, trips: 1},
		{name: "ratio below trip ratio stays closed", steps: []step{
			{record: Success, n: 11, want: Closed},
			{record: Transient, n: 10, want: Closed}, // 10/21 < 0.5
		}},
		{name: "ratio reaching trip ratio trips", steps: []step{
			{record: Success, n: 10, want: Closed},
			{record: Transient, n: 10, want: Open}, // 10/20 = 0.5
		}, trips: 1},
		{name: "ignored failures never trip", steps: []step{
			{record: Ignored, n: 1000, want: Closed},
			{record: Transient, n: 9, want: Closed},
		}},
		{name: "window slides: old successes fall out", steps: []step{
			{record: Success, n: 100, want: Closed},
			{advance: 5 * time.Second, record: Transient, n: 50, want: Closed}, // 50/150
			{advance: 6 * time.Second, record: Transient, n: 1, want: Open},    // successes left the window
		}, trips: 1},
		{name: "window slides: old failures fall out", steps: []step{
			{record: Transient, n: 9, want: Closed},
			{advance: 11 * time.Second, record: Transient, n: 9, want: Closed}, // the first nine are gone
			{record: Transient, n: 1, want: Open},
		}, trips: 1},
		{name: "window far in the past is empty", steps: []step{
			{record: Transient, n: 9, want: Closed},
			{advance: time.Hour, record: Transient, n: 9, want: Closed},
		}},
		{name: "half open: one probe in flight, success closes", steps: []step{
			{record: Transient, n: 10, want: Open},
			{advance: 999 * time.Millisecond, allow: true, want: Open, wantOK: false},
			{advance: time.Millisecond, allow: true, want: HalfOpen, wantOK: true},
			{allow: true, want: HalfOpen, wantOK: false}, // the probe is in flight
			{record: Success, n: 1, want: Closed},
			{allow: true, want: Closed, wantOK: true},
			{record: Transient, n: 9, want: Closed}, // the window starts empty again
		}, trips: 1},
		{name: "half open: ignored probe lets another through", steps: []step{
			{record: Transient, n: 10, want: Open},
			{advance: time.Second, allow: true, want: HalfOpen, wantOK: true},
			{record: Ignored, n: 1, want: HalfOpen},
			{allow: true, want: HalfOpen, wantOK: true},
		}, trips: 1},
		{name: "doubling up to the cap, reset on success", steps: []step{
			{record: Transient, n: 10, want: Open, wantUntil: time.Second},
			{advance: time.Second, allow: true, want: HalfOpen, wantOK: true},
			{record: Transient, n: 1, want: Open, wantUntil: 2 * time.Second},
			{advance: 2 * time.Second, allow: true, want: HalfOpen, wantOK: true},
			{record: Transient, n: 1, want: Open, wantUntil: 3 * time.Second}, // cap, not 4s
			{advance: 3 * time.Second, allow: true, want: HalfOpen, wantOK: true},
			{record: Transient, n: 1, want: Open, wantUntil: 3 * time.Second},
			{advance: 3 * time.Second, allow: true, want: HalfOpen, wantOK: true},
			{record: Success, n: 1, want: Closed},
			{record: Transient, n: 10, want: Open, wantUntil: time.Second}, // back to restart_after
		}, trips: 5},
		{name: "outcomes while open are not counted", steps: []step{
			{record: Transient, n: 10, want: Open},
			{record: Success, n: 5, want: Open},
			{record: Transient, n: 5, want: Open},
		}, trips: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			s, err := newAt(cfg, c.now)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tt.steps {
				c.add(st.advance)
				if st.allow {
					ok, wait, _ := s.Allow()
					if ok != st.wantOK {
						t.Fatalf("step %d: Allow = %v, want %v", i, ok, st.wantOK)
					}
					if !ok && wait <= 0 {
						t.Fatalf("step %d: refused with wait %s", i, wait)
					}
				} else {
					for range st.n {
						s.Record(st.record)
					}
				}
				got, until := s.State()
				if got != st.want {
					t.Fatalf("step %d: state %s, want %s", i, got, st.want)
				}
				if st.wantUntil > 0 && until.Sub(c.now()) != st.wantUntil {
					t.Fatalf("step %d: half-opens in %s, want %s", i, until.Sub(c.now()), st.wantUntil)
				}
			}
			if s.Trips() != tt.trips {
				t.Fatalf("trips %d, want %d", s.Trips(), tt.trips)
			}
		})
	}
}

func TestTransitionReported(t *testing.T) {
	c := newClock()
	s, err := newAt(Config{Enabled: true, Activation: 2, RestartAfter: time.Second}, c.now)
	if err != nil {
		t.Fatal(err)
	}
	if tr := s.Record(Transient); tr.Changed() {
		t.Fatalf("first failure: transition %+v", tr)
	}
	tr := s.Record(Transient)
	if tr.From != Closed || tr.To != Open || tr.Failures != 2 || tr.Calls != 2 || !tr.Until.Equal(c.now().Add(time.Second)) {
		t.Fatalf("trip: %+v", tr)
	}
	c.add(time.Second)
	if _, _, tr := s.Allow(); tr.From != Open || tr.To != HalfOpen {
		t.Fatalf("half open: %+v", tr)
	}
	if tr := s.Record(Success); tr.From != HalfOpen || tr.To != Closed {
		t.Fatalf("close: %+v", tr)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config (defaults): %v", err)
	}
	d := Config{}.WithDefaults()
	if d.Activation != DefaultActivation || d.TripRatio != DefaultTripRatio || d.Window != DefaultWindow ||
		d.RestartAfter != DefaultRestartAfter || d.MaxRestartAfter != DefaultMaxRestartAfter {
		t.Fatalf("defaults: %+v", d)
	}
	if d := (Config{RestartAfter: 10 * time.Minute}).WithDefaults(); d.MaxRestartAfter != 10*time.Minute {
		t.Fatalf("max_restart_after default below restart_after: %s", d.MaxRestartAfter)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Activation: -1}, "activation -1"},
		{Config{TripRatio: 1.5}, "trip_ratio 1.5"},
		{Config{TripRatio: -0.1}, "trip_ratio -0.1"},
		{Config{TripRatio: math.NaN()}, "trip_ratio NaN"},
		{Config{Window: 50 * time.Millisecond}, "window 50ms"},
		{Config{RestartAfter: -time.Second}, "restart_after -1s"},
		{Config{RestartAfter: time.Minute, MaxRestartAfter: time.Second}, "max_restart_after 1s"},
	}
	for _, b := range bad {
		err := b.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: error %v, want one naming %q", b.cfg, err, b.want)
		}
	}
	if _, err := New(Config{Activation: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with a bad config: %v", err)
	}
}

// newAt is New with the switch reading the time from now.
func newAt(cfg Config, now func() time.Time) (*Switch, error) {
	s, err := New(cfg)
	if s != nil {
		s.now = now
	}
	return s, err
}
