package lag

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testenv"
)

func TestSamplerConfigValidate(t *testing.T) {
	r := &Rabbit{} // never dialled: Validate only looks at the fields
	testenv.RunValidate(t, []testenv.ValidateCase[SamplerConfig]{
		{Name: "a source: defaults", Config: SamplerConfig{Rabbit: r}},
		{Name: "set", Config: SamplerConfig{Rabbit: r, RabbitQueues: []string{"q"}, Interval: time.Second}},
		{Name: "no source", Config: SamplerConfig{}, Want: "SamplerConfig.Kafka"},
		{Name: "negative Interval", Config: SamplerConfig{Rabbit: r, Interval: -time.Second}, Want: "SamplerConfig.Interval"},
		{Name: "negative HistoryPoints", Config: SamplerConfig{Rabbit: r, HistoryPoints: -1}, Want: "SamplerConfig.HistoryPoints"},
		{Name: "negative HistorySeries", Config: SamplerConfig{Rabbit: r, HistorySeries: -1}, Want: "SamplerConfig.HistorySeries"},
		{Name: "queues without rabbit", Config: SamplerConfig{Kafka: &Kafka{}, RabbitQueues: []string{"q"}}, Want: "SamplerConfig.RabbitQueues"},
	}, testenv.Wrapping(SamplerConfig.Validate, ErrInvalidConfig),
		func(c SamplerConfig) error { _, err := NewSampler(c); return err })
}
