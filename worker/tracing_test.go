package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// TestRuntimeTracing (issue 18): with tracing enabled the handler runs in
// a recording span, the child of the message's traceparent, and the spans
// are sent to the configured OTLP/HTTP endpoint when Run ends; without it
// the subscriptions have no tracer provider.
func TestRuntimeTracing(t *testing.T) {
	var posts atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	id := broker.NewMessageID()[:6]
	name, topic := "traced-worker-"+id, "worker-test.traced."+id
	yaml := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers:
  - {name: %s, topic: %s, retry: {max_retries: 1, backoff: 100ms}}
tracing: {enabled: true, endpoint: "%s/v1/traces", service_name: test}
`, id, name, topic, collector.URL)
	rt, err := worker.Parse(t.Context(), []byte(yaml), quiet(worker.Config{}))
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	teardown(t, yaml)
	if rt.Subscriptions()[0].TracerProvider == nil {
		t.Fatal("tracing enabled, but the subscription has no tracer provider")
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spans := make(chan trace.SpanContext, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- rt.Run(ctx, worker.Handlers{name: func(ctx context.Context, d *broker.Delivery) error {
			sp := trace.SpanFromContext(ctx)
			if !sp.IsRecording() {
				return broker.Permanent(fmt.Errorf("not recording"))
			}
			spans <- sp.SpanContext()
			return nil
		}})
	}()
	if err := rt.Broker().Declare(t.Context(), rt.Subscriptions()...); err != nil {
		t.Fatal(err)
	}
	msg := broker.Message{ID: "m1", Value: []byte("x"), Headers: map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}
	if err := rt.Broker().Publish(t.Context(), topic, msg); err != nil {
		t.Fatal(err)
	}
	var sc trace.SpanContext
	select {
	case sc = <-spans:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler was not called")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if sc.TraceID().String() != traceID {
		t.Errorf("handler's span in trace %s, want the message's %s", sc.TraceID(), traceID)
	}
	if posts.Load() == 0 {
		t.Error("no spans were sent to the OTLP endpoint when Run ended")
	}

	off := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers: [{name: %s, topic: %s, retry: {max_retries: 1, backoff: 100ms}}]
`, id, name, topic)
	rt, err = worker.Parse(t.Context(), []byte(off), quiet(worker.Config{}))
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer rt.Broker().Close()
	if rt.Subscriptions()[0].TracerProvider != nil {
		t.Error("tracing off, but the subscription has a tracer provider")
	}
}
