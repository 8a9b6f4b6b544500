package worker_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// teardown deletes, when the test ends, every exchange and queue the
// RabbitMQ configuration yaml declares (its prefix is the test's own).
func teardown(t testing.TB, yaml string) {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTopology(c) })
}

// removeTopology deletes every exchange and queue c declares on RabbitMQ.
func removeTopology(c *config.Config) {
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err != nil {
		return
	}
	_, _ = rabbit.Teardown(context.Background(), rc, c.Subscriptions()...)
}
