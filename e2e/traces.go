package e2e

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// The W3C trace context the traces case publishes with.
const (
	traceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceParent = "00f067aa0ba902b7"
	traceState  = "vendor=opaque,other=1"
)

// ended signals each ended span; registered after the in-memory exporter's
// syncer, so that a span it signals is already exported.
type ended struct{ ch chan struct{} }

func (e ended) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e ended) OnEnd(sdktrace.ReadOnlySpan)                     { e.ch <- struct{}{} }
func (e ended) Shutdown(context.Context) error                  { return nil }
func (e ended) ForceFlush(context.Context) error                { return nil }

// traces (issue 18): with a TracerProvider, a message carrying a
// traceparent and a tracestate that fails twice and then succeeds makes
// three spans of its trace, children of the incoming span, attempts 1..3,
// outcomes retry, retry, ack; each retry copy carries the same
// traceparent and tracestate; a message failing permanently makes one
// dead_letter span with its reason, and its dead letter keeps both
// headers.
func (s *suite) traces(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	exp := tracetest.NewInMemoryExporter()
	done := ended{ch: make(chan struct{}, 16)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(done))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sub := s.sub(topic, "traced", retrypolicy.Policy{MaxRetries: 3, Backoff: s.schedule(1)})
	sub.TracerProvider = tp
	declare(t, b, sub)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("traced", 1, func(d *broker.Delivery) error {
		if d.ID == "dead" {
			return broker.Permanent(failing("no such account"))
		}
		if d.Attempt < 3 {
			return failing("attempt %d fails", d.Attempt)
		}
		return nil
	}))
	hdr := map[string]string{"traceparent": "00-" + traceID + "-" + traceParent + "-01", "tracestate": traceState}
	publish(t, b, topic, broker.Message{ID: "ok", Value: []byte("v"), Headers: hdr}, broker.Message{ID: "dead", Value: []byte("v"), Headers: hdr})
	dls := s.env.DeadLetters(t.Context(), t, topic, "traced", 1, s.r)
	for i := range 4 {
		select {
		case <-done.ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of 4 spans ended", i)
		}
	}
	for _, c := range rec.Snapshot() {
		if c.d.Headers["traceparent"] != hdr["traceparent"] || c.d.Headers["tracestate"] != traceState {
			t.Errorf("%s attempt %d: traceparent %q tracestate %q, want %q %q", c.d.ID, c.attempt, c.d.Headers["traceparent"], c.d.Headers["tracestate"], hdr["traceparent"], traceState)
		}
	}
	if e := dls[0]; e.OriginalHeaders["traceparent"] != hdr["traceparent"] || e.OriginalHeaders["tracestate"] != traceState {
		t.Errorf("dead letter headers %v: traceparent or tracestate lost", e.OriginalHeaders)
	}
	var ok []tracetest.SpanStub
	var dead *tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name != driver.SpanPrefix+"traced" || sp.SpanContext.TraceID().String() != traceID ||
			sp.Parent.SpanID().String() != traceParent || sp.SpanContext.TraceState().String() != traceState {
			t.Errorf("span %q: trace %s parent %s state %q, want the message's", sp.Name, sp.SpanContext.TraceID(), sp.Parent.SpanID(), sp.SpanContext.TraceState())
		}
		switch attrOf(sp, "messaging.message.id").AsString() {
		case "ok":
			ok = append(ok, sp)
		case "dead":
			dead = &sp
		}
	}
	want := []string{"retry", "retry", "ack"}
	if len(ok) != len(want) || dead == nil {
		t.Fatalf("%d spans of the retried message and dead letter %v, want 3 and one", len(ok), dead != nil)
	}
	for i, sp := range ok {
		if a, o := attrOf(sp, driver.AttrAttempt), attrOf(sp, driver.AttrOutcome); a.AsInt64() != int64(i+1) || o.AsString() != want[i] {
			t.Errorf("span %d: attempt %d outcome %q, want %d %q", i, a.AsInt64(), o.AsString(), i+1, want[i])
		}
	}
	if o, r := attrOf(*dead, driver.AttrOutcome), attrOf(*dead, driver.AttrReason); o.AsString() != "dead_letter" || r.AsString() != string(driver.ReasonPermanent) {
		t.Errorf("dead letter's span: outcome %q reason %q, want dead_letter %q", o.AsString(), r.AsString(), driver.ReasonPermanent)
	}
}

// attrOf returns the value of a span's attribute k.
func attrOf(sp tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range sp.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}
