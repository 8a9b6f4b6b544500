package driver

import (
	"fmt"
	"time"

	"github.com/redrive/redrive/broker"
)

// MaxErrorLen bounds the error text carried in broker.HeaderError.
const MaxErrorLen = 1024

// MaxAttempt caps the attempt number a delivery carries: larger
// x-redrive-attempt values that parse as an int read as MaxAttempt, and a
// retry of MaxAttempt stays at MaxAttempt instead of overflowing.
const MaxAttempt = 1 << 30

// Outcome is what happens to a delivery whose handler failed, or that was
// dead-lettered without calling it.
type Outcome struct {
	// Retry is true when the message is tried again after Delay; false when
	// it is dead-lettered with Reason.
	Retry  bool
	Delay  time.Duration
	Reason Reason
	// Class and Error describe the failure.
	Class string
	Error string
}

// Decide applies sub's policy to a failure err of d (its Attempt and
// FirstFailureAt count) at now. Process calls it, and so does the worker's
// retry counter, so that both brokers and the metrics decide alike.
func Decide(sub broker.Subscription, d *broker.Delivery, err error, now time.Time) Outcome {
	o := Outcome{Class: broker.ErrorClass(err), Error: truncate(broker.ErrorMessage(err), MaxErrorLen)}
	if broker.IsPermanent(err) {
		o.Reason = ReasonPermanent
		return o
	}
	var elapsed time.Duration
	if !d.FirstFailureAt.IsZero() {
		elapsed = now.Sub(d.FirstFailureAt)
	}
	v := sub.Policy.Next(max(d.Attempt, 1), o.Class, elapsed)
	if !v.Retry {
		o.Reason = v.Reason
		return o
	}
	o.Retry, o.Delay = true, v.Delay
	if ra, ok := broker.RetryDelay(err); ok {
		o.Delay = max(ra, 0)
	}
	return o
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// PanicError is the failure the pipeline records when a handler panics:
// the recovered value and the goroutine's stack. Its class is
// broker.ClassPanic.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "handler panic: " and the recovered value.
func (e *PanicError) Error() string { return fmt.Sprintf("handler panic: %v", e.Value) }

// ErrorClass returns broker.ClassPanic: broker.ErrorClass reads it.
func (e *PanicError) ErrorClass() string { return broker.ClassPanic }
