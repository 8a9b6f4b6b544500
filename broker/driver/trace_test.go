package driver

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
)

const (
	testTraceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	testParentID = "00f067aa0ba902b7"
	testParent   = "00-" + testTraceID + "-" + testParentID + "-01"
)

// tracedSub is testSub(threeRetries) with spans recorded in memory.
func tracedSub(t *testing.T) (broker.Subscription, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sub := testSub(threeRetries)
	sub.TracerProvider = tp
	return sub, exp
}

// TestProcessSpans: each call is one span, the child of the delivery's
// traceparent, with the attempt, worker, outcome and reason; the handler's
// ctx carries it.
func TestProcessSpans(t *testing.T) {
	sub, exp := tracedSub(t)
	p, _ := newTestPipeline(sub)
	boom := errors.New("boom")
	var inHandler []trace.SpanContext
	h := func(ctx context.Context, d *broker.Delivery) error {
		inHandler = append(inHandler, trace.SpanContextFromContext(ctx))
		if d.Attempt < 4 {
			return boom
		}
		return nil
	}
	hdr := map[string]string{"traceparent": testParent, "tracestate": "vendor=abc"}
	wantActions := []Action{ActionRetry, ActionRetry, ActionRetry, ActionAck}
	for i, want := range wantActions {
		dec := p.Process(t.Context(), &broker.Delivery{Message: broker.Message{ID: "m1", Headers: hdr}, Attempt: i + 1, Offset: -1}, h, Input{})
		if dec.Action != want {
			t.Fatalf("attempt %d: %v, want %v", i+1, dec.Action, want)
		}
	}
	permanent := func(context.Context, *broker.Delivery) error { return broker.Permanent(boom) }
	p.Process(t.Context(), &broker.Delivery{Message: broker.Message{ID: "m2", Headers: hdr}, Attempt: 1, Offset: -1}, permanent, Input{})

	spans := exp.GetSpans()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 5", len(spans))
	}
	outcomes := []string{"retry", "retry", "retry", "ack", "dead_letter"}
	for i, s := range spans {
		if s.Name != SpanPrefix+sub.Group || s.SpanKind != trace.SpanKindConsumer {
			t.Errorf("span %d: name %q kind %v", i, s.Name, s.SpanKind)
		}
		if s.SpanContext.TraceID().String() != testTraceID || s.Parent.SpanID().String() != testParentID || !s.Parent.IsRemote() {
			t.Errorf("span %d: trace %s parent %s, want %s %s", i, s.SpanContext.TraceID(), s.Parent.SpanID(), testTraceID, testParentID)
		}
		if s.SpanContext.TraceState().Get("vendor") != "abc" {
			t.Errorf("span %d: tracestate %q, want vendor=abc kept", i, s.SpanContext.TraceState())
		}
		attrs := spanAttrs(s)
		wantAttempt := int64(min(i+1, 4))
		if i == 4 {
			wantAttempt = 1
		}
		if attrs[AttrAttempt].AsInt64() != wantAttempt || attrs[AttrWorker].AsString() != sub.Group || attrs[AttrOutcome].AsString() != outcomes[i] {
			t.Errorf("span %d: attributes %v, want attempt %d outcome %s", i, attrs, wantAttempt, outcomes[i])
		}
		if i < 4 && !inHandler[i].Equal(s.SpanContext) {
			t.Errorf("span %d: the handler's ctx carries %v, not the span", i, inHandler[i])
		}
	}
	if r := spanAttrs(spans[4])[AttrReason].AsString(); r != string(ReasonPermanent) {
		t.Errorf("dead letter's reason attribute %q, want %q", r, ReasonPermanent)
	}
	if _, ok := spanAttrs(spans[3])[AttrReason]; ok {
		t.Error("an ack has a dead-letter reason")
	}
}

// TestProcessSpanWithoutParent: no traceparent, or an invalid one, starts
// a new trace.
func TestProcessSpanWithoutParent(t *testing.T) {
	sub, exp := tracedSub(t)
	p, _ := newTestPipeline(sub)
	ok := func(context.Context, *broker.Delivery) error { return nil }
	for _, hdr := range []map[string]string{nil, {"traceparent": "00-zz-yy-01"}} {
		p.Process(t.Context(), &broker.Delivery{Message: broker.Message{Headers: hdr}, Offset: -1}, ok, Input{})
	}
	for i, s := range exp.GetSpans() {
		if s.Parent.IsValid() || !s.SpanContext.IsValid() {
			t.Errorf("span %d: parent %v, want a new root", i, s.Parent)
		}
	}
}

// TestProcessTracingOffAllocatesNothing: without a TracerProvider, an
// acknowledged delivery costs no allocation in Process (no span started).
func TestProcessTracingOffAllocatesNothing(t *testing.T) {
	p, _ := newTestPipeline(testSub(threeRetries))
	d := &broker.Delivery{Message: broker.Message{Headers: map[string]string{"traceparent": testParent}}, Attempt: 1, Offset: -1}
	ok := func(context.Context, *broker.Delivery) error { return nil }
	ctx := t.Context()
	if n := testing.AllocsPerRun(100, func() { p.Process(ctx, d, ok, Input{}) }); n != 0 {
		t.Fatalf("Process with tracing off: %v allocations, want 0", n)
	}
}

// BenchmarkProcessTracing: an acknowledged delivery with tracing off and
// on (an SDK provider exporting nowhere).
func BenchmarkProcessTracing(b *testing.B) {
	d := &broker.Delivery{Message: broker.Message{Headers: map[string]string{"traceparent": testParent}}, Attempt: 1, Offset: -1}
	ok := func(context.Context, *broker.Delivery) error { return nil }
	off := NewPipeline(testSub(threeRetries), nil)
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sub := testSub(threeRetries)
	sub.TracerProvider = tp
	on := NewPipeline(sub, nil)
	for _, c := range []struct {
		name string
		p    *Pipeline
	}{{"off", off}, {"on", on}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.p.Process(b.Context(), d, ok, Input{})
			}
		})
	}
}

// spanAttrs maps a recorded span's attributes by key.
func spanAttrs(s tracetest.SpanStub) map[attributeKey]attributeValue {
	m := make(map[attributeKey]attributeValue, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

type (
	attributeKey   = attribute.Key
	attributeValue = attribute.Value
)

// TestProcessSpanWithoutHandler: a delivery dead-lettered before its
// handler runs (expired) is a span too, with its reason.
func TestProcessSpanWithoutHandler(t *testing.T) {
	sub, exp := tracedSub(t)
	sub.MaxAge = time.Minute
	p, _ := newTestPipeline(sub)
	never := func(context.Context, *broker.Delivery) error { t.Error("handler called"); return nil }
	d := &broker.Delivery{Message: broker.Message{Headers: map[string]string{"traceparent": testParent}}, Attempt: 2, Offset: -1}
	p.Process(t.Context(), d, never, Input{Born: time.Now().Add(-time.Hour)})
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	a := spanAttrs(spans[0])
	if a[AttrOutcome].AsString() != "dead_letter" || a[AttrReason].AsString() != string(ReasonExpired) || a[AttrAttempt].AsInt64() != 2 {
		t.Errorf("attributes %v, want dead_letter, reason expired, attempt 2", a)
	}
}
