package e2e

import (
	"context"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// Open builds a broker the way applications do: a YAML configuration
// through the backend registry (the entry point worker.Load uses). The
// broker is closed when t ends.
func Open(t testing.TB, yaml string) broker.Broker {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("e2e configuration: %v", err)
	}
	b, err := assembly.Open(context.Background(), cfg, quietLogger())
	if err != nil {
		t.Fatalf("open %s: %v", cfg.Broker, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
