// The per-delivery pipeline every backend runs: the max-age check,
// poison-pill claims, the handler call with its panic recovered, the
// retry decision ([Decide]) and the one log line of each decision.
// [Pipeline.Process] returns a [Decision] (ack, retry after a delay,
// dead-letter with a reason, requeue with the same attempt, stop); the
// backend keeps only the transport: it executes the decision (acks or
// commits, writes the retry or dead-letter copy, whose headers [Patch]
// builds on the exact header model of broker/wire) and then
// [Pipeline.Release]s the delivery's claim.
//
// Log lines use one set of keys on every backend: message_id, attempt,
// offset (when the backend has offsets), reason, error_class, error,
// delay, claims, age. A dead-letter decision logs at Warn, a retry and a
// requeue at Debug.

package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
)

// Action is what the backend does with a delivery after Process.
type Action uint8

// Actions of a Decision.
const (
	// ActionAck: the handler succeeded; acknowledge the delivery (RabbitMQ) or
	// mark its offset done (Kafka).
	ActionAck Action = iota
	// ActionRetry: the delivery is tried again after Decision.Outcome.Delay.
	ActionRetry
	// ActionDeadLetter: the delivery goes to the dead-letter queue with
	// Decision.Outcome.Reason.
	ActionDeadLetter
	// ActionRequeue: the handler handed the delivery back (broker.Requeue); it
	// is handled again with the same attempt, spending no retry and never
	// dead-lettered for it (RabbitMQ: a copy with the same headers to the
	// group queue; Kafka: handled again in place).
	ActionRequeue
	// ActionStop: the handler was not called because the consumer is stopping
	// (the handler returned ErrStopped); the delivery is left to the
	// broker, unacknowledged.
	ActionStop
)

// String names a, for logs and test failures.
func (a Action) String() string {
	switch a {
	case ActionAck:
		return "ack"
	case ActionRetry:
		return "retry"
	case ActionDeadLetter:
		return "dead_letter"
	case ActionRequeue:
		return "requeue"
	case ActionStop:
		return "stop"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// ErrStopped is returned by a backend's wrapper of the handler when the
// consumer stops before the handler could run (Kafka: waiting for a
// concurrency slot). Process then decides ActionStop. It is compared by
// identity: an application's handler cannot return it.
var ErrStopped = errors.New("driver: consumer stopping, handler not called")

// Input is what the backend knows of a delivery beyond the Delivery.
type Input struct {
	// Born is when the message's age counts from for Subscription.MaxAge.
	// Zero skips the check: RabbitMQ's group queue expires messages itself
	// (x-message-ttl), and a Kafka retry in place was checked on its
	// first call.
	Born time.Time
	// ClaimKey is the delivery's key in Subscription.Claims (ClaimKey);
	// empty when the counter does not count it.
	ClaimKey string
	// NativeClaims is the broker's own count of this delivery's claims,
	// this one included (a RabbitMQ quorum queue's x-delivery-count + 1);
	// 0 = none. Used when ClaimKey is empty.
	NativeClaims int64
	// Undecodable, when not empty, says why the broker client could not
	// decode the delivery's properties (its headers are not the message's):
	// it is dead-lettered with ReasonUndecodable, before anything else,
	// without calling the handler.
	Undecodable string
}

// Decision is what Process decided about one delivery.
type Decision struct {
	// Action is what the backend does with the delivery.
	Action Action
	// Outcome describes a Retry or DeadLetter: delay or reason, and the
	// failure's class and error text (only the class and text for a
	// ActionRequeue).
	Outcome Outcome
	// Cause is the handler's error; nil when the handler succeeded or was
	// not called (expired, over max claims).
	Cause error
	// At is when the decision was taken: the failure time of the copy's
	// story.
	At time.Time
	// claim is the counter key Release forgets.
	claim string
}

// Pipeline runs the deliveries of one subscription. It is safe for
// concurrent use.
type Pipeline struct {
	sub broker.Subscription
	log *slog.Logger
	// tracer starts a span per call of Process; nil = tracing off.
	tracer trace.Tracer
	// now is the pipeline's clock (SetClock); time.Now by default.
	now func() time.Time
}

// NewPipeline returns the pipeline of sub (with its defaults applied), logging to
// log (slog.Default when nil).
func NewPipeline(sub broker.Subscription, log *slog.Logger) *Pipeline {
	if log == nil {
		log = slog.Default()
	}
	return &Pipeline{sub: sub, log: log, tracer: tracerOf(sub.TracerProvider), now: time.Now}
}

// SetClock makes now the pipeline's clock: the time of its decisions
// (Decision.At, hence the failure times of a copy's story), the time a
// message's age counts to for MaxAge (from Input.Born, which must be on
// the same clock) and the time the policy's elapsed budget
// (retrypolicy.Policy.MaxElapsed) counts to. A backend whose time is not
// the wall clock's (an in-memory broker driven by a test's clock) sets it
// before the first Process; nil restores time.Now, the default.
func (p *Pipeline) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	p.now = now
}

// Process runs one delivery d through the pipeline: a message the broker
// client could not decode (in.Undecodable), one older than the
// subscription's MaxAge (counted from in.Born) and one claimed more than
// MaxClaims times are dead-lettered without calling h; otherwise h
// runs on d with a panic recovered as a *PanicError, and a failure
// is decided by the subscription's policy (Decide), except one marked with
// broker.Requeue, which is handed back (ActionRequeue). The decision is logged
// here; the backend executes it, then calls Release.
//
// h may change d; the backend builds a retry or dead-letter copy from the
// delivery as it arrived, not from d.
//
// With the subscription's TracerProvider set, each call is one span, the
// child of the delivery's W3C traceparent header, named SpanPrefix + the
// worker, with the attempt, worker, outcome and dead-letter reason as
// attributes; h's ctx carries it. Without, no span is started.
func (p *Pipeline) Process(ctx context.Context, d *broker.Delivery, h broker.Handler, in Input) Decision {
	if p.tracer != nil {
		return p.traced(ctx, d, h, in)
	}
	return p.process(ctx, d, h, in)
}

// process is Process without its span.
func (p *Pipeline) process(ctx context.Context, d *broker.Delivery, h broker.Handler, in Input) Decision {
	sub := &p.sub
	// What the log and the decision need of d as delivered: h may change d.
	at := seen{id: d.ID, offset: d.Offset, attempt: d.Attempt, first: d.FirstFailureAt}
	if in.Undecodable != "" {
		dec := Decision{Action: ActionDeadLetter, At: p.now(), Outcome: Outcome{
			Reason: ReasonUndecodable,
			Class:  ClassUndecodable,
			Error:  truncate(in.Undecodable, MaxErrorLen),
		}}
		p.log.Warn("dead-lettering a message its client cannot decode", at.keys(dec)...)
		return dec
	}
	if sub.MaxAge > 0 && !in.Born.IsZero() {
		if age := p.now().Sub(in.Born); age > sub.MaxAge {
			dec := Decision{Action: ActionDeadLetter, At: p.now(), Outcome: Outcome{
				Reason: ReasonExpired,
				Class:  ClassExpired,
				Error:  fmt.Sprintf("message is %s old, over the max age %s", age.Round(time.Millisecond), sub.MaxAge),
			}}
			p.log.Warn("dead-lettering an expired message", at.keys(dec, "age", age)...)
			return dec
		}
	}
	var dec Decision
	if n, over := p.claim(ctx, &dec, in); over {
		dec.Action, dec.At, dec.Outcome = ActionDeadLetter, p.now(), MaxClaimsOutcome(n, sub.MaxClaims)
		p.log.Warn("dead-lettering a poison pill", at.keys(dec, "claims", n)...)
		return dec
	}
	err := call(ctx, h, d)
	switch {
	case err == nil:
		dec.Action = ActionAck
		return dec
	case err == ErrStopped: // identity: only a backend's wrapper returns it
		dec.Action = ActionStop
		return dec
	}
	dec.Cause, dec.At = err, p.now()
	if broker.IsRequeue(err) {
		dec.Action = ActionRequeue
		dec.Outcome = Outcome{Class: broker.ErrorClass(err), Error: truncate(broker.ErrorMessage(err), MaxErrorLen)}
		if p.log.Enabled(ctx, slog.LevelDebug) {
			p.log.Debug("requeueing", at.keys(dec)...)
		}
		return dec
	}
	dec.Outcome = Decide(p.sub, &broker.Delivery{Attempt: at.attempt, FirstFailureAt: at.first}, err, dec.At)
	if dec.Outcome.Retry {
		dec.Action = ActionRetry
		if p.log.Enabled(ctx, slog.LevelDebug) {
			p.log.Debug("retrying", at.keys(dec, "delay", dec.Outcome.Delay)...)
		}
		return dec
	}
	dec.Action = ActionDeadLetter
	p.log.Warn("dead-lettering", at.keys(dec)...)
	return dec
}

// Release forgets the claim of a delivery whose decision was executed
// (acked, or its copy confirmed). Errors are ignored: the counter's key
// expires on its own.
func (p *Pipeline) Release(ctx context.Context, dec Decision) {
	if dec.claim == "" || p.sub.Claims == nil {
		return
	}
	_ = p.sub.Claims.Release(ctx, dec.claim)
}

// seen is what Process keeps of a delivery as it arrived.
type seen struct {
	id      string
	offset  int64
	attempt int
	first   time.Time
}

// keys are the log keys of dec about the delivery, then extra.
func (s seen) keys(dec Decision, extra ...any) []any {
	kv := make([]any, 0, 12+len(extra))
	kv = append(kv, "message_id", s.id)
	if s.offset >= 0 {
		kv = append(kv, "offset", s.offset)
	}
	kv = append(kv, "attempt", max(s.attempt, 1))
	kv = append(kv, extra...)
	if dec.Action == ActionDeadLetter {
		kv = append(kv, "reason", dec.Outcome.Reason)
	}
	return append(kv, "error_class", dec.Outcome.Class, "error", dec.Outcome.Error)
}

// call runs h on d, turning a panic into a *PanicError.
func call(ctx context.Context, h broker.Handler, d *broker.Delivery) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h(ctx, d)
}
