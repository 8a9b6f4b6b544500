package retrypolicy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Exponential is an exponential back-off: retry n waits
// Initial × Multiplier^(n-1), capped at Max, then spread by ±Jitter (a
// fraction in [0, 1]), so a delay may exceed Max by up to Jitter × Max. The
// elapsed-time budget lives on Policy.MaxElapsed.
type Exponential struct {
	Initial    time.Duration // default 1s
	Multiplier float64       // default 2
	Max        time.Duration // 0 = no cap
	Jitter     float64       // 0 = none; 0.2 = ±20 %
}

// Delay implements Backoff.
func (e Exponential) Delay(n int) time.Duration {
	if n < 1 {
		return 0
	}
	d := e.base(n)
	if e.Jitter > 0 {
		d += d * min(e.Jitter, 1) * (2*rand.Float64() - 1)
	}
	return clampDuration(d)
}

// base is the delay of retry n before jitter.
func (e Exponential) base(n int) float64 {
	initial, mult := e.Initial, e.Multiplier
	if initial <= 0 {
		initial = time.Second
	}
	if !(mult >= 1) || math.IsInf(mult, 0) { // also catches NaN
		mult = 2
	}
	d := float64(initial) * math.Pow(mult, float64(n-1))
	if e.Max > 0 && d > float64(e.Max) {
		d = float64(e.Max)
	}
	if d > math.MaxInt64/2 {
		d = math.MaxInt64 / 2
	}
	return d
}

// longest returns the longest delay the first n retries can wait, jitter
// included. It is deterministic.
func (e Exponential) longest(n int) time.Duration {
	if n < 1 {
		return 0
	}
	d := e.base(n) // base is non-decreasing in n
	if e.Jitter > 0 {
		d *= 1 + min(e.Jitter, 1)
	}
	return clampDuration(d)
}

// clampDuration converts d to a Duration, saturating instead of overflowing.
func clampDuration(d float64) time.Duration {
	switch {
	case d >= math.MaxInt64: // float64(math.MaxInt64) is 2^63
		return math.MaxInt64
	case d <= 0:
		return 0
	}
	return time.Duration(d)
}

// String renders e for logs.
func (e Exponential) String() string {
	return fmt.Sprintf("exponential(initial=%s, multiplier=%g, max=%s, jitter=%g)",
		FormatDuration(e.Initial), e.Multiplier, FormatDuration(e.Max), e.Jitter)
}

// Validate checks the fields, naming the bad one.
func (e Exponential) Validate() error {
	switch {
	case e.Initial < 0:
		return fmt.Errorf("%w: initial: %s is negative", ErrInvalid, e.Initial)
	case math.IsNaN(e.Multiplier) || math.IsInf(e.Multiplier, 0):
		return fmt.Errorf("%w: multiplier: %g is not a finite number", ErrInvalid, e.Multiplier)
	case e.Multiplier != 0 && e.Multiplier < 1:
		return fmt.Errorf("%w: multiplier: %g is below 1", ErrInvalid, e.Multiplier)
	case e.Max < 0:
		return fmt.Errorf("%w: max: %s is negative", ErrInvalid, e.Max)
	case !(e.Jitter >= 0 && e.Jitter <= 1): // also catches NaN
		return fmt.Errorf("%w: jitter: %g is outside [0, 1]", ErrInvalid, e.Jitter)
	}
	return nil
}
