package retrypolicy

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestExponentialDelay(t *testing.T) {
	tests := []struct {
		name string
		e    Exponential
		want []time.Duration // retries 1, 2, 3, …
	}{
		{"defaults", Exponential{}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"growth", Exponential{Initial: 100 * time.Millisecond, Multiplier: 3}, []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, 2700 * time.Millisecond}},
		{"cap", Exponential{Initial: time.Second, Multiplier: 2, Max: 5 * time.Second}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"initial above cap", Exponential{Initial: time.Minute, Max: time.Second}, []time.Duration{time.Second, time.Second}},
		{"multiplier 1", Exponential{Initial: time.Second, Multiplier: 1}, []time.Duration{time.Second, time.Second, time.Second}},
		{"multiplier below 1 means default", Exponential{Initial: time.Second, Multiplier: 0.5}, []time.Duration{time.Second, 2 * time.Second}},
		{"NaN multiplier means default", Exponential{Initial: time.Second, Multiplier: math.NaN()}, []time.Duration{time.Second, 2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				if got := tt.e.Delay(i + 1); got != want {
					t.Errorf("Delay(%d) = %v, want %v", i+1, got, want)
				}
			}
			if got := tt.e.Delay(0); got != 0 {
				t.Errorf("Delay(0) = %v, want 0", got)
			}
		})
	}
}

func TestExponentialDelayHuge(t *testing.T) {
	for _, e := range []Exponential{
		{},
		{Multiplier: 10},
		{Multiplier: 10, Jitter: 1},
		{Initial: math.MaxInt64, Jitter: 1},
	} {
		prev := time.Duration(0)
		for _, n := range []int{1, 10, 63, 64, 100, 1000, math.MaxInt32} {
			d := e.Delay(n)
			if d < 0 {
				t.Fatalf("%v: Delay(%d) = %v overflowed", e, n, d)
			}
			if e.Jitter == 0 && d < prev {
				t.Fatalf("%v: Delay(%d) = %v is shorter than the retry before (%v)", e, n, d, prev)
			}
			prev = d
		}
	}
}

func TestExponentialJitterBounds(t *testing.T) {
	e := Exponential{Initial: time.Second, Multiplier: 2, Max: 8 * time.Second, Jitter: 0.2}
	for n := 1; n <= 6; n++ {
		base := Exponential{Initial: e.Initial, Multiplier: e.Multiplier, Max: e.Max}.Delay(n)
		lo := time.Duration(float64(base) * 0.8)
		hi := time.Duration(float64(base) * 1.2)
		seen := map[time.Duration]bool{}
		var below, above bool
		for range 2000 {
			d := e.Delay(n)
			if d < lo || d > hi {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", n, d, lo, hi)
			}
			seen[d] = true
			below = below || d < base
			above = above || d > base
		}
		if len(seen) < 100 || !below || !above {
			t.Errorf("Delay(%d): %d distinct values over 2000 samples (below base: %v, above: %v); jitter is not spreading", n, len(seen), below, above)
		}
	}
}

func TestExponentialValidate(t *testing.T) {
	valid := []Exponential{
		{},
		{Initial: time.Second, Multiplier: 1, Max: time.Minute, Jitter: 1},
		{Jitter: 0.5},
	}
	for _, e := range valid {
		if err := e.Validate(); err != nil {
			t.Errorf("%v: Validate() = %v", e, err)
		}
	}
	invalid := []struct {
		e     Exponential
		field string
	}{
		{Exponential{Initial: -time.Second}, "initial"},
		{Exponential{Multiplier: 0.5}, "multiplier"},
		{Exponential{Multiplier: math.NaN()}, "multiplier"},
		{Exponential{Multiplier: math.Inf(1)}, "multiplier"},
		{Exponential{Max: -1}, "max"},
		{Exponential{Jitter: -0.1}, "jitter"},
		{Exponential{Jitter: 1.5}, "jitter"},
		{Exponential{Jitter: math.NaN()}, "jitter"},
	}
	for _, tt := range invalid {
		err := tt.e.Validate()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: Validate() = %v, want ErrInvalid", tt.e, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.field+":") {
			t.Errorf("%v: Validate() = %q, does not name %s", tt.e, err, tt.field)
		}
	}
}

func TestExponentialString(t *testing.T) {
	e := Exponential{Initial: time.Second, Multiplier: 2, Max: 5 * time.Minute, Jitter: 0.2}
	if got, want := e.String(), "exponential(initial=1s, multiplier=2, max=5m, jitter=0.2)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestPolicyNext(t *testing.T) {
	sched := Schedule{Delays: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}}
	type step struct {
		failures int
		class    string
		elapsed  time.Duration
		want     Verdict
	}
	tests := []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"zero value dead-letters at once", Policy{}, []step{
			{1, "error", 0, Verdict{Reason: ReasonMaxRetries}},
		}},
		{"max retries 0 with a backoff", Policy{MaxRetries: 0, Backoff: sched}, []step{
			{1, "error", 0, Verdict{Reason: ReasonMaxRetries}},
		}},
		{"exactly max retries", Policy{MaxRetries: 3, Backoff: sched}, []step{
			{1, "error", 0, Verdict{Retry: true, Delay: time.Second}},
			{2, "error", 0, Verdict{Retry: true, Delay: 5 * time.Second}},
			{3, "error", 0, Verdict{Retry: true, Delay: 30 * time.Second}},
			{4, "error", 0, Verdict{Reason: ReasonMaxRetries}},
			{5, "error", 0, Verdict{Reason: ReasonMaxRetries}},
		}},
		{"schedule shorter than retries repeats", Policy{MaxRetries: 5, Backoff: sched}, []step{
			{4, "error", 0, Verdict{Retry: true, Delay: 30 * time.Second}},
			{5, "error", 0, Verdict{Retry: true, Delay: 30 * time.Second}},
			{6, "error", 0, Verdict{Reason: ReasonMaxRetries}},
		}},
		{"nil backoff retries without delay", Policy{MaxRetries: 1}, []step{
			{1, "error", 0, Verdict{Retry: true}},
			{2, "error", 0, Verdict{Reason: ReasonMaxRetries}},
		}},
		{"non-retriable class", Policy{MaxRetries: 5, Backoff: sched, NonRetriable: []string{"json.SyntaxError", "validation"}}, []step{
			{1, "json.SyntaxError", 0, Verdict{Reason: ReasonNonRetriable}},
			{1, "validation", 0, Verdict{Reason: ReasonNonRetriable}},
			{1, "Validation", 0, Verdict{Retry: true, Delay: time.Second}},
			{1, "", 0, Verdict{Retry: true, Delay: time.Second}},
			{2, "error", 0, Verdict{Retry: true, Delay: 5 * time.Second}},
		}},
		{"empty class never matches", Policy{MaxRetries: 1, NonRetriable: []string{""}}, []step{
			{1, "", 0, Verdict{Retry: true}},
		}},
		{"max elapsed", Policy{MaxRetries: 10, Backoff: sched, MaxElapsed: time.Minute}, []step{
			{1, "error", 0, Verdict{Retry: true, Delay: time.Second}},
			{2, "error", 59 * time.Second, Verdict{Retry: true, Delay: 5 * time.Second}},
			{3, "error", time.Minute, Verdict{Reason: ReasonMaxElapsed}},
			{3, "error", time.Hour, Verdict{Reason: ReasonMaxElapsed}},
		}},
		{"unlimited", Policy{Unlimited: true, Backoff: sched}, []step{
			{1, "error", 0, Verdict{Retry: true, Delay: time.Second}},
			{1000, "error", 0, Verdict{Retry: true, Delay: 30 * time.Second}},
			{math.MaxInt32, "error", 0, Verdict{Retry: true, Delay: 30 * time.Second}},
		}},
		{"unlimited still honours max elapsed and classes", Policy{Unlimited: true, MaxElapsed: time.Hour, NonRetriable: []string{"permanent"}}, []step{
			{50, "error", 59 * time.Minute, Verdict{Retry: true}},
			{51, "error", time.Hour, Verdict{Reason: ReasonMaxElapsed}},
			{1, "permanent", 0, Verdict{Reason: ReasonNonRetriable}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.steps {
				if got := tt.p.Next(s.failures, s.class, s.elapsed); got != s.want {
					t.Errorf("Next(%d, %q, %v) = %+v, want %+v", s.failures, s.class, s.elapsed, got, s.want)
				}
			}
		})
	}
}

// TestPolicyNextCountsRetries drives a message through a policy the way a
// broker does and counts the retries it gets.
func TestPolicyNextCountsRetries(t *testing.T) {
	for _, maxRetries := range []int{0, 1, 2, 5, 10} {
		p := Policy{MaxRetries: maxRetries, Backoff: Exponential{Initial: time.Millisecond}}
		retries := 0
		for failures := 1; ; failures++ {
			v := p.Next(failures, "error", 0)
			if !v.Retry {
				if v.Reason != ReasonMaxRetries {
					t.Errorf("MaxRetries %d: reason %q, want %q", maxRetries, v.Reason, ReasonMaxRetries)
				}
				break
			}
			retries++
			if retries > 100 {
				t.Fatalf("MaxRetries %d: still retrying after 100 retries", maxRetries)
			}
		}
		if retries != maxRetries {
			t.Errorf("MaxRetries %d: got %d retries", maxRetries, retries)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	valid := []Policy{
		{},
		{MaxRetries: 5, Backoff: Schedule{Delays: []time.Duration{time.Second}}},
		{Unlimited: true, Backoff: Exponential{Max: time.Hour, Jitter: 0.1}},
		{MaxRetries: 3, MaxElapsed: time.Hour, NonRetriable: []string{"x"}},
	}
	for _, p := range valid {
		if err := p.Validate(); err != nil {
			t.Errorf("%v: Validate() = %v", p, err)
		}
	}
	invalid := []struct {
		p    Policy
		want string
	}{
		{Policy{MaxRetries: -1}, "max_retries"},
		{Policy{MaxRetries: -1, Unlimited: true}, "max_retries"},
		{Policy{MaxElapsed: -time.Second}, "max_elapsed"},
		{Policy{MaxRetries: 1, Backoff: Schedule{}}, "backoff:"},
		{Policy{MaxRetries: 1, Backoff: Schedule{Delays: []time.Duration{-1}}}, "step 1"},
		{Policy{MaxRetries: 1, Backoff: Exponential{Jitter: 2}}, "jitter"},
		{Policy{MaxRetries: 1, Backoff: &Exponential{Jitter: 2}}, "jitter"},
	}
	for _, tt := range invalid {
		err := tt.p.Validate()
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: Validate() = %v, want ErrInvalid", tt.p, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: Validate() = %q, does not mention %q", tt.p, err, tt.want)
		}
	}
}

// stepBackoff is a Backoff that is neither a Schedule nor an Exponential.
type stepBackoff struct{}

func (stepBackoff) Delay(n int) time.Duration { return time.Duration(n%7) * time.Second }
func (stepBackoff) String() string            { return "step" }

func TestLongestDelay(t *testing.T) {
	long := make([]time.Duration, 100)
	for i := range long {
		long[i] = time.Duration(i+1) * time.Second
	}
	tests := []struct {
		name string
		p    Policy
		want time.Duration
	}{
		{"no backoff", Policy{MaxRetries: 5}, 0},
		{"no retries", Policy{Backoff: Schedule{Delays: []time.Duration{time.Hour}}}, 0},
		{"schedule", Policy{MaxRetries: 5, Backoff: Schedule{Delays: []time.Duration{time.Second, time.Hour, time.Minute}}}, time.Hour},
		{"schedule cut by max retries", Policy{MaxRetries: 2, Backoff: Schedule{Delays: []time.Duration{time.Second, time.Minute, time.Hour}}}, time.Minute},
		{"schedule longer than 64 steps", Policy{MaxRetries: 100, Backoff: Schedule{Delays: long}}, 100 * time.Second},
		{"schedule pointer", Policy{MaxRetries: 100, Backoff: &Schedule{Delays: long}}, 100 * time.Second},
		{"unlimited schedule", Policy{Unlimited: true, Backoff: Schedule{Delays: long}}, 100 * time.Second},
		{"exponential", Policy{MaxRetries: 4, Backoff: Exponential{Initial: time.Second}}, 8 * time.Second},
		{"exponential capped", Policy{MaxRetries: 20, Backoff: Exponential{Initial: time.Second, Max: time.Minute}}, time.Minute},
		{"exponential with jitter", Policy{MaxRetries: 20, Backoff: Exponential{Initial: time.Second, Max: time.Minute, Jitter: 0.5}}, 90 * time.Second},
		{"exponential pointer", Policy{MaxRetries: 20, Backoff: &Exponential{Initial: time.Second, Max: time.Minute}}, time.Minute},
		{"unlimited exponential capped", Policy{Unlimited: true, Backoff: Exponential{Max: time.Hour}}, time.Hour},
		{"unlimited exponential multiplier 1", Policy{Unlimited: true, Backoff: Exponential{Initial: time.Second, Multiplier: 1, Max: time.Hour}}, time.Second},
		{"unlimited exponential uncapped", Policy{Unlimited: true, Backoff: Exponential{Jitter: 1}}, math.MaxInt64},
		{"other backoff", Policy{MaxRetries: 100, Backoff: stepBackoff{}}, 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 { // deterministic, even with jitter
				if got := tt.p.LongestDelay(); got != tt.want {
					t.Fatalf("LongestDelay() = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestLongestDelayBoundsDelays checks that no delay a policy asks for is
// longer than its LongestDelay.
func TestLongestDelayBoundsDelays(t *testing.T) {
	for _, p := range []Policy{
		{MaxRetries: 10, Backoff: Exponential{Initial: time.Second, Max: 10 * time.Second, Jitter: 1}},
		{MaxRetries: 10, Backoff: Exponential{Initial: time.Second, Jitter: 0.3}},
		{MaxRetries: 3, Backoff: Schedule{Delays: []time.Duration{time.Second, time.Minute, time.Hour, 2 * time.Hour}}},
	} {
		longest := p.LongestDelay()
		for range 200 {
			for failures := 1; failures <= p.MaxRetries; failures++ {
				if v := p.Next(failures, "", 0); v.Delay > longest {
					t.Fatalf("%v: Next(%d) asked for %v, longer than LongestDelay() = %v", p, failures, v.Delay, longest)
				}
			}
		}
	}
}

func TestPolicyString(t *testing.T) {
	tests := []struct {
		p    Policy
		want string
	}{
		{Policy{}, "max 0 retries, backoff none"},
		{Policy{MaxRetries: 3, Backoff: Schedule{Delays: []time.Duration{time.Second, 5 * time.Second}}}, "max 3 retries, backoff 1s -> 5s"},
		{Policy{Unlimited: true, Backoff: Schedule{Delays: []time.Duration{time.Minute}}}, "unlimited retries, backoff 1m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func BenchmarkPolicyNext(b *testing.B) {
	p := Policy{
		MaxRetries:   5,
		Backoff:      Exponential{Initial: time.Second, Max: time.Minute, Jitter: 0.2},
		NonRetriable: []string{"validation", "json.SyntaxError", "panic"},
		MaxElapsed:   time.Hour,
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Next(i%7+1, "error", time.Minute)
	}
}
