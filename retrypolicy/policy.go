package retrypolicy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ErrInvalid is wrapped by every validation error of this package.
var ErrInvalid = errors.New("invalid retry policy")

// Backoff yields the delay before a retry.
type Backoff interface {
	// Delay returns the wait before retry number n (1-based: n = 1 is the
	// first retry, after the first failure).
	Delay(n int) time.Duration
	// String renders the back-off the way it is written in configuration.
	String() string
}

// Policy is one worker's retry policy. The zero value dead-letters on the
// first failure.
type Policy struct {
	// MaxRetries is how many times a failed message is tried again before it
	// is dead-lettered. 0 dead-letters on the first failure. Negative values
	// are invalid: unlimited retries must be asked for with Unlimited.
	MaxRetries int
	// Unlimited retries forever, ignoring MaxRetries. It must be explicit.
	Unlimited bool
	// Backoff gives the delay before each retry. Nil means no delay.
	Backoff Backoff
	// NonRetriable lists error classes that go straight to the dead-letter
	// queue whatever retries remain.
	NonRetriable []string
	// MaxElapsed, when positive, stops retrying once this much time has
	// passed since the first failure.
	MaxElapsed time.Duration
}

// Validate reports the first problem of p, naming the field.
func (p Policy) Validate() error {
	if p.MaxRetries < 0 {
		return fmt.Errorf("%w: max_retries: %d is negative (unlimited retries must be explicit)", ErrInvalid, p.MaxRetries)
	}
	if p.MaxElapsed < 0 {
		return fmt.Errorf("%w: max_elapsed: %s is negative", ErrInvalid, p.MaxElapsed)
	}
	if v, ok := p.Backoff.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("backoff: %w", err)
		}
	}
	return nil
}

// Verdict is what a Policy decides about one failure.
type Verdict struct {
	// Retry is true when the message is to be tried again after Delay.
	Retry bool
	// Delay is the wait before the retry.
	Delay time.Duration
	// Reason says why the message is dead-lettered when Retry is false:
	// ReasonMaxRetries, ReasonNonRetriable or ReasonMaxElapsed.
	Reason Reason
}

// Reason is why a message is dead-lettered: the value of its
// x-redrive-reason header. It is declared here, at the bottom of the
// imports, so that the policy's verdicts and the reasons package broker
// declares (driver.Reason is this type) are one typed set.
type Reason string

// Reasons a Verdict gives for not retrying.
const (
	ReasonMaxRetries   Reason = "max_retries"
	ReasonNonRetriable Reason = "permanent"
	ReasonMaxElapsed          = ReasonMaxRetries // the elapsed budget is a retry budget
)

// Next decides what happens after a failure. failures counts the failures so
// far, this one included (1 after the first failure); class is the error
// class of this failure; elapsed is the time since the first failure.
func (p Policy) Next(failures int, class string, elapsed time.Duration) Verdict {
	if class != "" && slices.Contains(p.NonRetriable, class) {
		return Verdict{Reason: ReasonNonRetriable}
	}
	if !p.Unlimited && failures > p.MaxRetries {
		return Verdict{Reason: ReasonMaxRetries}
	}
	if p.MaxElapsed > 0 && elapsed >= p.MaxElapsed {
		return Verdict{Reason: ReasonMaxElapsed}
	}
	var d time.Duration
	if p.Backoff != nil {
		d = p.Backoff.Delay(failures)
	}
	return Verdict{Retry: true, Delay: d}
}

// LongestDelay returns the longest delay p can ask for: the largest step of
// a schedule within the retries allowed, the longest delay of an exponential
// back-off with its jitter included (at most Max × (1 + Jitter) when capped).
// It is deterministic. For other Backoff implementations it is the longest of
// the first 1000 retries. Brokers with a bounded delay range check it against
// their maximum.
func (p Policy) LongestDelay() time.Duration {
	if p.Backoff == nil {
		return 0
	}
	n := p.MaxRetries
	if p.Unlimited {
		n = math.MaxInt32
	}
	if n < 1 {
		return 0
	}
	switch b := p.Backoff.(type) {
	case Schedule:
		return b.longest(n)
	case *Schedule:
		if b != nil {
			return b.longest(n)
		}
		return 0
	case Exponential:
		return b.longest(n)
	case *Exponential:
		if b != nil {
			return b.longest(n)
		}
		return 0
	}
	var longest time.Duration
	for i := 1; i <= min(n, 1000); i++ {
		longest = max(longest, p.Backoff.Delay(i))
	}
	return longest
}

// String renders p for logs and `redrive config check`.
func (p Policy) String() string {
	b := "none"
	if p.Backoff != nil {
		b = p.Backoff.String()
	}
	if p.Unlimited {
		return fmt.Sprintf("unlimited retries, backoff %s", b)
	}
	return fmt.Sprintf("max %d retries, backoff %s", p.MaxRetries, b)
}
