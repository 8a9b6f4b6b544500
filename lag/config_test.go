package lag

import (
	"errors"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testenv"
)

func TestSamplerConfigValidate(t *testing.T) {
	r := &Rabbit{} // never dialled: Validate only looks at the fields
	var cases []testenv.ValidateCase
	for _, c := range []struct {
		name string
		cfg  SamplerConfig
		want string
	}{
		{"a source: defaults", SamplerConfig{Rabbit: r}, ""},
		{"set", SamplerConfig{Rabbit: r, RabbitQueues: []string{"q"}, Interval: time.Second}, ""},
		{"no source", SamplerConfig{}, "SamplerConfig.Kafka"},
		{"negative Interval", SamplerConfig{Rabbit: r, Interval: -time.Second}, "SamplerConfig.Interval"},
		{"queues without rabbit", SamplerConfig{Kafka: &Kafka{}, RabbitQueues: []string{"q"}}, "SamplerConfig.RabbitQueues"},
	} {
		cases = append(cases, testenv.ValidateCase{Name: c.name, Want: c.want,
			Validate: func() error {
				err := c.cfg.Validate()
				if err != nil && !errors.Is(err, ErrInvalidConfig) {
					return errors.New("does not wrap ErrInvalidConfig: " + err.Error())
				}
				return err
			},
			New: func() error { _, err := NewSampler(c.cfg); return err }})
	}
	testenv.RunValidate(t, cases)
}
