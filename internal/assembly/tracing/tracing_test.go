package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/assembly/config"
)

// TestNewOff: tracing disabled makes no provider.
func TestNewOff(t *testing.T) {
	tp, err := New(t.Context(), config.Tracing{Endpoint: "http://127.0.0.1:1/v1/traces"})
	if tp != nil || err != nil {
		t.Fatalf("New(disabled) = %v, %v; want nil, nil", tp, err)
	}
}

// TestNewOn: tracing enabled makes a provider whose tracer records, with
// the configured service name; shutting it down with nothing to send
// needs no collector.
func TestNewOn(t *testing.T) {
	tp, err := New(t.Context(), config.Tracing{Enabled: true, Endpoint: "http://127.0.0.1:1/v1/traces", ServiceName: "billing", SampleRatio: 1})
	if err != nil || tp == nil {
		t.Fatalf("New(enabled) = %v, %v", tp, err)
	}
	defer func() {
		// Nothing listens there: bound the flush of the span.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}()
	_, span := tp.Tracer("test").Start(t.Context(), "x")
	if !span.IsRecording() || !span.SpanContext().IsSampled() {
		t.Fatal("the span does not record")
	}
	span.End()
}
