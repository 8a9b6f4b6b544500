package heartbeat

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestSamplerConfigValidate(t *testing.T) {
	testenv.RunValidate(t, []testenv.ValidateCase[SamplerConfig]{
		{Name: "zero is the default", Config: SamplerConfig{}},
		{Name: "set", Config: SamplerConfig{Interval: time.Second, Workers: []Worker{{Type: "w", DLQSeverity: "critical"}}}},
		{Name: "negative Interval", Config: SamplerConfig{Interval: -time.Second}, Want: "SamplerConfig.Interval"},
		{Name: "negative HistoryPoints", Config: SamplerConfig{HistoryPoints: -1}, Want: "SamplerConfig.HistoryPoints"},
		{Name: "worker without type", Config: SamplerConfig{Workers: []Worker{{Type: "w"}, {}}}, Want: "SamplerConfig.Workers[1]"},
	}, SamplerConfig.Validate, func(c SamplerConfig) error { _, err := NewSampler(&Monitor{}, c); return err })
}
