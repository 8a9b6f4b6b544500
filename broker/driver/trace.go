package driver

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
)

// TracerName is the instrumentation scope of the spans Process starts.
const TracerName = "github.com/redrive/redrive"

// SpanPrefix starts the name of a handler attempt's span; the worker's
// name follows ("redrive.handle orders-billing").
const SpanPrefix = "redrive.handle "

// Attributes of a handler attempt's span.
const (
	// AttrAttempt is the delivery's attempt number, 1 for the first.
	AttrAttempt = attribute.Key("redrive.attempt")
	// AttrWorker is the worker (consumer group) name.
	AttrWorker = attribute.Key("redrive.worker")
	// AttrOutcome is the decision: ack, retry, dead_letter, requeue or stop.
	AttrOutcome = attribute.Key("redrive.outcome")
	// AttrReason is the dead-letter reason, on dead_letter only.
	AttrReason = attribute.Key("redrive.dead_letter.reason")
	// AttrErrorClass is the failure's error class, on a failure only.
	AttrErrorClass = attribute.Key("redrive.error_class")
	// AttrMessageID is the message id (messaging semantic conventions).
	AttrMessageID = attribute.Key("messaging.message.id")
	// AttrDestination is the topic consumed (messaging semantic
	// conventions).
	AttrDestination = attribute.Key("messaging.destination.name")
)

// traceContext reads a W3C traceparent and tracestate; it keeps no state.
var traceContext = propagation.TraceContext{}

// deliveryCarrier reads a delivery's headers for the propagator, from
// Headers or, with HeadersOnDemand, from the backend.
type deliveryCarrier struct{ d *broker.Delivery }

func (c deliveryCarrier) Get(key string) string { return c.d.Header(key) }
func (c deliveryCarrier) Set(string, string)    {} // extraction only
func (c deliveryCarrier) Keys() []string {
	var keys []string
	for k := range c.d.AllHeaders() {
		keys = append(keys, k)
	}
	return keys
}

// traced is Process with a span around it: the child of the delivery's
// traceparent (a new root when it has none or an invalid one), carried by
// the handler's ctx, ended with the decision's outcome. Called only when
// the subscription has a TracerProvider, so that tracing off costs
// nothing.
func (p *Pipeline) traced(ctx context.Context, d *broker.Delivery, h broker.Handler, in Input) Decision {
	ctx = traceContext.Extract(ctx, deliveryCarrier{d})
	attempt := max(d.Attempt, 1)
	ctx, span := p.tracer.Start(ctx, SpanPrefix+p.sub.Group,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			AttrAttempt.Int(attempt),
			AttrWorker.String(p.sub.Group),
			AttrDestination.String(p.sub.Topic),
			AttrMessageID.String(d.ID),
		))
	dec := p.process(ctx, d, h, in)
	span.SetAttributes(AttrOutcome.String(dec.Action.String()))
	if dec.Action == ActionDeadLetter {
		span.SetAttributes(AttrReason.String(string(dec.Outcome.Reason)))
	}
	if dec.Outcome.Class != "" {
		span.SetAttributes(AttrErrorClass.String(dec.Outcome.Class))
	}
	switch dec.Action {
	case ActionRetry, ActionDeadLetter, ActionRequeue:
		span.SetStatus(codes.Error, dec.Outcome.Error)
	}
	span.End()
	return dec
}

// tracerOf returns the tracer of tp, nil when tp is nil (tracing off).
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName)
}
