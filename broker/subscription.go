package broker

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/retrypolicy"
)

// ErrInvalidSubscription is wrapped by Subscription.Validate errors.
var ErrInvalidSubscription = errors.New("invalid subscription")

// Defaults applied by Subscription.WithDefaults.
const (
	DefaultConcurrency     = 1
	DefaultShutdownTimeout = 30 * time.Second
)

// Limits checked by Subscription.Validate.
const (
	// MaxConcurrency bounds Concurrency: beyond, run more instances.
	MaxConcurrency = 10_000
	// MaxPrefetch bounds Prefetch: RabbitMQ's prefetch count is a 16-bit
	// number (a larger one would wrap around, 65536 meaning unlimited).
	MaxPrefetch = 65_535
)

// Subscription binds a worker (group) to a topic.
type Subscription struct {
	// Topic to consume. Required.
	Topic string
	// Group is the worker name; every group gets every message. Required.
	Group string
	// Policy decides retries and dead-lettering.
	Policy retrypolicy.Policy
	// RetryMode: Blocking (default), NonBlocking or Share (Kafka share
	// groups). RabbitMQ retries never block other messages, so it honours
	// only ordering-free NonBlocking semantics and ignores Blocking and
	// NonBlocking; it refuses Share, which is Kafka's.
	RetryMode RetryMode
	// Concurrency is the number of handler goroutines (RabbitMQ, Kafka
	// share mode) or the number of partitions handled at once (Kafka
	// blocking and non-blocking modes). Default 1, at most MaxConcurrency.
	Concurrency int
	// Prefetch bounds unacknowledged messages per consumer (RabbitMQ QoS;
	// Kafka share mode: the records each member of the share group takes
	// per poll). Default 2 × Concurrency, at most MaxPrefetch.
	Prefetch int
	// MaxAge: a message older than this when it is received (or, on
	// RabbitMQ, while it waits in the group queue) is dead-lettered with
	// reason "expired" without calling the handler. 0 = no limit.
	MaxAge time.Duration
	// DLQ options of this worker.
	DLQ DLQOptions
	// HeadersOnDemand leaves Delivery.Headers nil: the handler reads
	// headers with Delivery.Header and Delivery.AllHeaders, from where the
	// backend holds them (the Kafka record, the AMQP table), and no map is
	// built per message (on Kafka, two allocations and a fifth of
	// redrive's own cost per record). Headers may still be set (a Kafka
	// blocking retry in place gets a built map), so a handler reads
	// through Header and must not write Headers. Retry and dead-letter
	// copies carry every header as usual. Default false.
	HeadersOnDemand bool
	// ReuseDeliveries lets the backend hand a later message in the same
	// Delivery, and its Headers map, once the handler returned: the
	// handler must not keep d or d.Headers, nor use them from another
	// goroutine, after it returns (Key, Value and header values may be
	// kept; they are never reused). On Kafka a partition's worker then
	// allocates nothing per record (a fresh Delivery and map were more
	// than half of redrive's own cost per record); RabbitMQ gives every
	// delivery its own. Default false: a handler may keep its *Delivery.
	ReuseDeliveries bool
	// ShutdownTimeout bounds how long in-flight handlers may run after the
	// context ends. Default 30 s.
	ShutdownTimeout time.Duration
	// MaxClaims dead-letters a message with reason "max_claims", without
	// calling the handler, once it was delivered this many times without
	// its handler finishing (poison-pill protection). 0 = off. Kafka and
	// RabbitMQ classic queues need Claims; RabbitMQ quorum queues without
	// Claims count with the broker's x-delivery-count.
	MaxClaims int
	// MaxClaimsDefault says MaxClaims is a default (a configured worker
	// that does not set max_claims), not a choice: where claims cannot be
	// counted it is simply off, and the backends do not warn about it.
	MaxClaimsDefault bool
	// Claims counts claims for MaxClaims (handler starts, exactly); nil =
	// no counting except on RabbitMQ quorum queues.
	Claims ClaimCounter
	// TracerProvider, when set, makes each handler attempt an OpenTelemetry
	// span, the child of the message's W3C traceparent header, carried by
	// the handler's ctx; nil (the default) = no spans, at no cost.
	TracerProvider trace.TracerProvider
}

// WithDefaults returns s with documented defaults filled in.
func (s Subscription) WithDefaults() Subscription {
	if s.RetryMode == "" {
		s.RetryMode = Blocking
	}
	if s.Concurrency <= 0 {
		s.Concurrency = DefaultConcurrency
	}
	if s.Prefetch <= 0 && s.Concurrency <= MaxConcurrency {
		s.Prefetch = min(2*s.Concurrency, MaxPrefetch)
	}
	if s.ShutdownTimeout <= 0 {
		s.ShutdownTimeout = DefaultShutdownTimeout
	}
	if s.DLQ.Severity == "" {
		s.DLQ.Severity = DefaultSeverity
	}
	return s
}

// Validate reports the first problem, naming the field.
func (s Subscription) Validate() error {
	switch {
	case s.Topic == "":
		return fmt.Errorf("%w: topic is empty", ErrInvalidSubscription)
	case s.Group == "":
		return fmt.Errorf("%w: group is empty", ErrInvalidSubscription)
	case s.RetryMode != "" && s.RetryMode != Blocking && s.RetryMode != NonBlocking && s.RetryMode != Share:
		return fmt.Errorf("%w: retry mode %q is not blocking, non_blocking or share", ErrInvalidSubscription, s.RetryMode)
	case s.MaxAge < 0:
		return fmt.Errorf("%w: max age %s is negative", ErrInvalidSubscription, s.MaxAge)
	case s.Concurrency < 0:
		return fmt.Errorf("%w: concurrency %d is negative", ErrInvalidSubscription, s.Concurrency)
	case s.Concurrency > MaxConcurrency:
		return fmt.Errorf("%w: concurrency %d is over %d", ErrInvalidSubscription, s.Concurrency, MaxConcurrency)
	case s.Prefetch < 0 || s.Prefetch > MaxPrefetch:
		return fmt.Errorf("%w: prefetch %d is not from 0 to %d", ErrInvalidSubscription, s.Prefetch, MaxPrefetch)
	case s.MaxClaims < 0:
		return fmt.Errorf("%w: max claims %d is negative", ErrInvalidSubscription, s.MaxClaims)
	}
	if err := s.DLQ.Validate(); err != nil {
		return fmt.Errorf("%w: dlq %w", ErrInvalidSubscription, err)
	}
	if err := s.Policy.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSubscription, err)
	}
	return nil
}
