package config

import (
	"fmt"
	"strings"
)

// Defaults of the tracing section.
const (
	DefaultTracingEndpoint    = "http://localhost:4318/v1/traces"
	DefaultTracingProtocol    = "http/protobuf"
	DefaultTracingServiceName = "redrive"
	DefaultTracingSampleRatio = 1.0
)

// TraceIDPlaceholder is what console.trace_link's template must contain:
// the console puts the trace id in its place.
const TraceIDPlaceholder = "{trace_id}"

// Tracing configures the OpenTelemetry spans of the workers: one span per
// handler attempt, the child of the message's W3C traceparent header,
// exported with OTLP over HTTP.
type Tracing struct {
	// Enabled starts the spans. Default false: no tracer provider is
	// made and no span is started, at no cost per message.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the OTLP/HTTP traces URL of the collector (an
	// OpenTelemetry Collector, Jaeger, Tempo); http or https. Default
	// http://localhost:4318/v1/traces.
	Endpoint string `yaml:"endpoint"`
	// Protocol of the exporter: `http/protobuf` (the default and the one
	// supported; gRPC is not built in).
	Protocol string `yaml:"protocol"`
	// ServiceName is the service.name of the spans' resource. Default
	// "redrive".
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the fraction of new traces sampled, in (0, 1]; a
	// message with a traceparent follows its sampled flag. Default 1.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// Console configures the dead-letter console of serve and dev.
type Console struct {
	// TraceLink is the link of a dead letter's trace id on its entry page
	// (its traceparent header), a template with {trace_id}, e.g.
	// "https://tempo.example/trace/{trace_id}"; http or https. Default
	// none: the trace id is shown without a link.
	TraceLink string `yaml:"trace_link"`
}

// applyDefaults fills in the tracing defaults.
func (t *Tracing) applyDefaults() {
	setDefault(&t.Endpoint, DefaultTracingEndpoint)
	setDefault(&t.Protocol, DefaultTracingProtocol)
	setDefault(&t.ServiceName, DefaultTracingServiceName)
	setDefault(&t.SampleRatio, DefaultTracingSampleRatio)
}

// validate checks the tracing section (also when disabled, so that turning
// it on cannot fail later).
func (t Tracing) validate(p *problems) {
	checkURL(p, "tracing.endpoint", t.Endpoint, "http", "https")
	if t.Protocol != DefaultTracingProtocol {
		p.add("tracing.protocol", fmt.Sprintf("%q is not %s (the OTLP exporter built in)", shown(t.Protocol), DefaultTracingProtocol))
	}
	if t.SampleRatio <= 0 || t.SampleRatio > 1 {
		p.add("tracing.sample_ratio", fmt.Sprintf("%v is not in (0, 1]", t.SampleRatio))
	}
}

// validate checks the console section.
func (c Console) validate(p *problems) {
	if c.TraceLink == "" {
		return
	}
	if !strings.Contains(c.TraceLink, TraceIDPlaceholder) {
		p.add("console.trace_link", fmt.Sprintf("%q has no %s", shown(c.TraceLink), TraceIDPlaceholder))
		return
	}
	checkURL(p, "console.trace_link", strings.ReplaceAll(c.TraceLink, TraceIDPlaceholder, "0"), "http", "https")
}
