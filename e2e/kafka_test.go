package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/dlq"
)

// TestKafka runs the suite, then the dead-letter operations suite (which
// needs PostgreSQL, see DatabaseURL), against an in-process three-broker
// kfake cluster, or against the cluster of KAFKA_BROKERS when set.
func TestKafka(t *testing.T) {
	env := kafkaEnv(kafkatest.Cluster(t))
	Run(t, env)
	t.Run("DLQ", func(t *testing.T) { RunDLQ(t, env) })
	t.Run("Relay", func(t *testing.T) { RunRelay(t, env) })
}

// TestKafkaShare runs the suite and the dead-letter operations suite with
// every subscription in share mode (Kafka share groups, KIP-932), against
// an in-process kfake cluster, or against the cluster of KAFKA_BROKERS
// when set (Kafka 4.2+ with share groups enabled).
func TestKafkaShare(t *testing.T) {
	env := kafkaEnv(kafkatest.Cluster(t))
	env.RetryMode = broker.Share
	Run(t, env)
	t.Run("DLQ", func(t *testing.T) { RunDLQ(t, env) })
}

// kafkaEnv is the suite's environment on the cluster at brokers; brokers
// are opened through the configuration entry point, with the short group
// timings tests want.
func kafkaEnv(brokers []string) Env {
	yaml := fmt.Sprintf(`
broker: kafka
kafka:
  brokers: [%q]
  partitions: 3
  client_id: redrive-e2e
  commit_interval: 100ms
  fetch_max_wait: 100ms
  heartbeat_interval: 100ms
  session_timeout: 10s
  rebalance_timeout: 10s
`, strings.Join(brokers, ","))
	return Env{
		Name: "kafka",
		New:  func(t testing.TB) broker.Broker { return Open(t, yaml) },
		DeadLetters: func(ctx context.Context, t testing.TB, topic, group string, want int, quiet time.Duration) []dlq.Entry {
			return kafkatest.Entries(kafkatest.DeadLetters(ctx, t, brokers, topic, group, want, quiet))
		},
		Resolution: 100 * time.Millisecond,
		Router:     kafka.Router{},
		RawPublish: func(t testing.TB, topic string, key, value []byte, headers map[string][]byte) {
			t.Helper()
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			rec := &kgo.Record{Topic: topic, Key: key, Value: value}
			for k, v := range headers {
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: v})
			}
			if err := cl.ProduceSync(t.Context(), rec).FirstErr(); err != nil {
				t.Fatalf("raw produce: %v", err)
			}
		},
	}
}
