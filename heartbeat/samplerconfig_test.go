package heartbeat

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testenv"
)

func TestSamplerConfigValidate(t *testing.T) {
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  SamplerConfig
		want string
	}{
		{"zero is the default", SamplerConfig{}, ""},
		{"set", SamplerConfig{Interval: time.Second, Workers: []Worker{{Type: "w", DLQSeverity: "critical"}}}, ""},
		{"negative Interval", SamplerConfig{Interval: -time.Second}, "SamplerConfig.Interval"},
		{"worker without type", SamplerConfig{Workers: []Worker{{Type: "w"}, {}}}, "SamplerConfig.Workers[1]"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Validate: c.cfg.Validate, Want: c.want,
			New: func() error { _, err := NewSampler(&Monitor{}, c.cfg); return err }})
	}
	testenv.RunValidate(t, cases)
}
