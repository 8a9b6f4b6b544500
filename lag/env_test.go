package lag

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The sampler's tests measure real brokers through the backends' own
// monitors: Kafka on a kfake cluster (kafka.LagMonitor), RabbitMQ on the
// test server (rabbit.DepthMonitor).

const topic = "orders"

// kafkaEnv is kafkatest's lagging cluster of topic.
type kafkaEnv struct{ *kafkatest.Lagging }

func newKafka(t testing.TB) kafkaEnv { return kafkaEnv{kafkatest.NewLagging(t, topic)} }

func (e kafkaEnv) produce(t testing.TB, p int32, n int, ts time.Time) { e.Produce(t, p, n, ts) }

func (e kafkaEnv) commit(t testing.TB, group string, offsets map[int32]int64) {
	e.Commit(t, group, offsets)
}

// measurer is the Kafka backend's monitor of groups on the cluster.
func (e kafkaEnv) measurer(t testing.TB, groups ...string) *kafka.LagMonitor {
	t.Helper()
	k, err := kafka.NewLagMonitor(e.Client, kafka.LagConfig{Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rabbitChannel connects to the test RabbitMQ (failing the test when it is
// unreachable).
func rabbitChannel(t testing.TB) *amqp.Channel { return testenv.AMQP(t) }

// declareQueue is testenv.FilledQueue: a queue of the test's own holding
// n messages.
func declareQueue(t testing.TB, ch *amqp.Channel, n int) string { return testenv.FilledQueue(t, ch, n) }

// newDepth is the RabbitMQ backend's monitor of queues at url.
func newDepth(t testing.TB, url string, queues ...string) *rabbit.DepthMonitor {
	t.Helper()
	qs := make([]rabbit.MeasuredQueue, len(queues))
	for i, q := range queues {
		qs[i] = rabbit.MeasuredQueue{Name: q}
	}
	r, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URL: url, DialTimeout: time.Second, Queues: qs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// both measures group lag and queue depth: the two monitors as one, for
// a sampler with every family.
type both struct {
	*kafka.LagMonitor
	depth *rabbit.DepthMonitor
}

func (b both) MeasureDepth(ctx context.Context) ([]driver.QueueDepth, error) {
	return b.depth.MeasureDepth(ctx)
}

var _ interface {
	driver.GroupLagMonitor
	driver.DepthMonitor
} = both{}
