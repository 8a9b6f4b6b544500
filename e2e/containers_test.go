//go:build containers

package e2e

import (
	"os"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
)

// TestKafkaContainers is the optional lane: the same suite against a real
// Kafka broker in a container. It runs with `make test-containers`
// (E2E_CONTAINERS=1, build tag containers) and skips with one line when no
// Docker engine answers; kfake (TestKafka) is always the main path.
func TestKafkaContainers(t *testing.T) {
	if os.Getenv("E2E_CONTAINERS") != "1" {
		t.Skip("E2E_CONTAINERS is not 1: the container lane is off")
	}
	testcontainers.SkipIfProviderIsNotHealthy(t)
	kc, err := tckafka.Run(t.Context(), "confluentinc/confluent-local:7.5.0", tckafka.WithClusterID("redrive-e2e"))
	if err != nil {
		t.Fatalf("start Kafka container: %v", err)
	}
	t.Cleanup(func() { _ = testcontainers.TerminateContainer(kc) })
	brokers, err := kc.Brokers(t.Context())
	if err != nil {
		t.Fatalf("Kafka container brokers: %v", err)
	}
	env := kafkaEnv(brokers)
	Run(t, env)
	t.Run("DLQ", func(t *testing.T) { RunDLQ(t, env) })
}
