package backend

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/internal/config"
)

type testConfig struct{ prefix string }

// TestConfigOf maps a configuration through the registered mapping of its
// type, and fails with ErrNotLinked for a type nobody registered.
func TestConfigOf(t *testing.T) {
	RegisterConfig(func(c *config.Config, _ *slog.Logger) (testConfig, error) {
		return testConfig{prefix: c.RabbitMQ.Prefix}, nil
	})
	got, err := ConfigOf[testConfig](&config.Config{RabbitMQ: config.RabbitMQ{Prefix: "p1"}}, nil)
	if err != nil || got.prefix != "p1" {
		t.Fatalf("ConfigOf = %+v, %v; want prefix p1", got, err)
	}
	if _, err := ConfigOf[struct{ x int }](&config.Config{}, nil); !errors.Is(err, ErrNotLinked) {
		t.Fatalf("ConfigOf of an unregistered type: %v, want ErrNotLinked", err)
	}
	if q, err := DelayQueues(&config.Config{Broker: "none"}); q != nil || err != nil {
		t.Fatalf("DelayQueues of an unlinked backend = %v, %v; want nil, nil", q, err)
	}
}
