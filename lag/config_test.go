package lag

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSamplerConfigValidate(t *testing.T) {
	r := &Rabbit{} // never dialled: Validate only looks at the fields
	tests := []struct {
		name string
		cfg  SamplerConfig
		want string // "" = valid, else the field the error must name
	}{
		{"a source: defaults", SamplerConfig{Rabbit: r}, ""},
		{"set", SamplerConfig{Rabbit: r, RabbitQueues: []string{"q"}, Interval: time.Second}, ""},
		{"no source", SamplerConfig{}, "SamplerConfig.Kafka"},
		{"negative Interval", SamplerConfig{Rabbit: r, Interval: -time.Second}, "SamplerConfig.Interval"},
		{"queues without rabbit", SamplerConfig{Kafka: &Kafka{}, RabbitQueues: []string{"q"}}, "SamplerConfig.RabbitQueues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line wrapping ErrInvalidConfig naming %s", err, tt.want)
			}
			if _, err := NewSampler(tt.cfg); err == nil {
				t.Error("NewSampler accepted a config Validate refuses")
			}
		})
	}
}
