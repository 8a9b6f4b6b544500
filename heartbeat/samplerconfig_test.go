package heartbeat

import (
	"strings"
	"testing"
	"time"
)

func TestSamplerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  SamplerConfig
		want string // "" = valid, else the field the error must name
	}{
		{"zero is the default", SamplerConfig{}, ""},
		{"set", SamplerConfig{Interval: time.Second, Workers: []Worker{{Type: "w", DLQSeverity: "critical"}}}, ""},
		{"negative Interval", SamplerConfig{Interval: -time.Second}, "SamplerConfig.Interval"},
		{"worker without type", SamplerConfig{Workers: []Worker{{Type: "w"}, {}}}, "SamplerConfig.Workers[1]"},
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
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Validate = %v, want one line naming %s", err, tt.want)
			}
			if _, err := NewSampler(&Monitor{}, tt.cfg); err == nil {
				t.Error("NewSampler accepted a config Validate refuses")
			}
		})
	}
}
