package lag

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// measuresNothing is a driver.Monitor that is neither a group lag nor a
// depth monitor.
type measuresNothing struct{}

func (measuresNothing) Close() error { return nil }

func TestSamplerConfigValidate(t *testing.T) {
	r := newDepth(t, "amqp://guest:guest@127.0.0.1:1/") // never dialled: Validate only looks at the fields
	testenv.RunValidate(t, []testenv.ValidateCase[SamplerConfig]{
		{Name: "a source: defaults", Config: SamplerConfig{Monitor: r, Source: "rabbitmq"}},
		{Name: "set", Config: SamplerConfig{Monitor: r, Source: "rabbitmq", Interval: time.Second}},
		{Name: "no monitor", Config: SamplerConfig{Source: "rabbitmq"}, Want: "SamplerConfig.Monitor"},
		{Name: "a monitor that measures nothing", Config: SamplerConfig{Monitor: measuresNothing{}, Source: "x"}, Want: "SamplerConfig.Monitor"},
		{Name: "no source", Config: SamplerConfig{Monitor: r}, Want: "SamplerConfig.Source"},
		{Name: "negative Interval", Config: SamplerConfig{Monitor: r, Source: "rabbitmq", Interval: -time.Second}, Want: "SamplerConfig.Interval"},
		{Name: "negative HistoryPoints", Config: SamplerConfig{Monitor: r, Source: "rabbitmq", HistoryPoints: -1}, Want: "SamplerConfig.HistoryPoints"},
		{Name: "negative HistorySeries", Config: SamplerConfig{Monitor: r, Source: "rabbitmq", HistorySeries: -1}, Want: "SamplerConfig.HistorySeries"},
	}, testenv.Wrapping(SamplerConfig.Validate, ErrInvalidConfig),
		func(c SamplerConfig) error { _, err := NewSampler(c); return err })
}
