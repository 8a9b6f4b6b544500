package lag

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testenv"
)

// The sampler's tests measure real brokers through the backends' own
// monitors: Kafka on a kfake cluster (kafka.LagMonitor), RabbitMQ on the
// test server (rabbit.DepthMonitor).

const topic = "orders"

// kafkaEnv is a one-broker kfake cluster with a 3-partition topic, a
// client and an admin.
type kafkaEnv struct {
	cl  *kgo.Client
	adm *kadm.Client
}

func newKafka(t testing.TB) *kafkaEnv {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &kafkaEnv{cl: cl, adm: kadm.NewClient(cl)}
}

// produce writes n records to partition p, timestamped ts.
func (e *kafkaEnv) produce(t testing.TB, p int32, n int, ts time.Time) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: ts}
	}
	if err := e.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// commit sets group's committed offsets with kadm (for a group without
// members).
func (e *kafkaEnv) commit(t testing.TB, group string, offsets map[int32]int64) {
	t.Helper()
	var os kadm.Offsets
	for p, o := range offsets {
		os.AddOffset(topic, p, o, -1)
	}
	if err := e.adm.CommitAllOffsets(context.Background(), group, os); err != nil {
		t.Fatalf("commit %v: %v", offsets, err)
	}
}

// measurer is the Kafka backend's monitor of groups on the cluster.
func (e *kafkaEnv) measurer(t testing.TB, groups ...string) *kafka.LagMonitor {
	t.Helper()
	k, err := kafka.NewLagMonitor(e.cl, kafka.LagConfig{Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rabbitChannel connects to the test RabbitMQ (failing the test when it is
// unreachable) with publisher confirms on.
func rabbitChannel(t testing.TB) *amqp.Channel {
	t.Helper()
	ch := testenv.AMQP(t)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	return ch
}

// declareQueue declares a queue of the test's own, deleted at the end, and
// publishes n messages to it, confirmed.
func declareQueue(t testing.TB, ch *amqp.Channel, n int) string {
	t.Helper()
	name := testenv.Name(t)
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil { // durable: RabbitMQ 4 deprecates transient non-exclusive queues
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.DeleteQueues(name) })
	ctx := context.Background()
	for i := range n {
		conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", name, true, false, amqp.Publishing{Body: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := conf.WaitContext(ctx); err != nil || !ok {
			t.Fatalf("publish %d not confirmed: %v", i, err)
		}
	}
	return name
}

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
