// Package tracing makes the OpenTelemetry tracer provider of the
// configuration's tracing section: an SDK provider exporting the workers'
// spans with OTLP over HTTP, batched. The spans themselves are started by
// the backends' pipeline (broker/driver), once per handler attempt, when a subscription has a
// TracerProvider; with tracing off no provider is made and none is
// installed anywhere (the global OpenTelemetry provider is left alone).
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redrive/redrive/internal/assembly/config"
)

// New returns the tracer provider of cfg (its defaults applied and
// validated by package config), nil when tracing is disabled. The exporter
// connects lazily: an unreachable collector loses spans, never messages.
// The caller shuts the provider down, which flushes the spans it holds.
func New(ctx context.Context, cfg config.Tracing) (*sdktrace.TracerProvider, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter to %s: %w", cfg.Endpoint, err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	), nil
}
