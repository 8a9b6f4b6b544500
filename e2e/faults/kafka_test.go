//go:build faults

package faults

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/retrypolicy"
)

const childKafka = "kafka"

// childCluster starts a three-broker kfake cluster, closed when t ends,
// that accepts the children's one-second group sessions.
func childCluster(t testing.TB) []string {
	t.Helper()
	_, brokers := kafkatest.Fake(t, kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "100"}))
	return brokers
}

// kafkaSub is the subscription of the Kafka cases.
func kafkaSub(topic string) broker.Subscription {
	return broker.Subscription{
		Topic: topic, Group: "g",
		Policy:          retrypolicy.Policy{MaxRetries: 2},
		Concurrency:     3,
		ShutdownTimeout: 5 * time.Second,
	}
}

// kafkaDeadLetters reads <topic>.dlq and counts group's dead letters by
// message id.
func kafkaDeadLetters(t testing.TB, brokers []string, sub broker.Subscription) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range kafkatest.Entries(kafkatest.DeadLetters(context.Background(), t, brokers, sub.Topic, sub.Group, 0, 2*time.Second)) {
		out[e.MessageID]++
	}
	return out
}

// kafkaChild is the worker subprocess of the Kafka cases: it consumes
// kafkaSub(FAULTS_TOPIC) on the cluster at FAULTS_BROKERS until SIGTERM.
func kafkaChild(ctx context.Context) error {
	b, err := kafka.New(ctx, kafkaChildConfig(strings.Split(os.Getenv(envBrokers), ",")))
	if err != nil {
		return err
	}
	defer b.Close()
	sub, done := childSub(kafkaSub(os.Getenv(envTopic)))
	defer done()
	return b.Consume(ctx, sub, childHandler)
}

// kafkaChildConfig is the Kafka configuration of a child on brokers: a
// killed member leaves the group after a second, not ten (see
// childCluster).
func kafkaChildConfig(brokers []string) kafka.Config {
	cfg := kafkatest.Config(brokers)
	cfg.SessionTimeout, cfg.RebalanceTimeout = time.Second, 2*time.Second
	return cfg
}

// testKilledKafka is TestWorkerKilled on a kfake cluster that lives in this
// process; the worker subprocesses connect to its address.
func testKilledKafka(t *testing.T) {
	brokers := childCluster(t)
	topic := "faults.killed." + broker.NewMessageID()[:6]
	sub := kafkaSub(topic)
	b := kafkatest.New(t, brokers, nil)
	if err := b.Declare(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	published := ids(topic, 400)
	publishAll(t, b, topic, published, nil)
	env := []string{envBrokers + "=" + strings.Join(brokers, ","), envTopic + "=" + topic}
	handled := killedMidBatch(t, childKafka, env, len(published))
	account(t, published, handled, kafkaDeadLetters(t, brokers, sub))
}
