//go:build faults

package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// The cases, in the order they run and appear in the table.

// TestWorkerKilled SIGKILLs a worker process mid-batch and restarts it:
// what it had not acknowledged is redelivered to the new process.
func TestWorkerKilled(t *testing.T) {
	t.Run("rabbitmq", func(t *testing.T) {
		topic := "faults.killed." + broker.NewMessageID()[:6]
		sub := rabbitSub(topic)
		b, prefix := newRabbit(t, sub)
		published := ids(topic, 400)
		publishAll(t, b, topic, published, nil)
		env := []string{envPrefix + "=" + prefix, envTopic + "=" + topic}
		handled := killedMidBatch(t, childRabbit, env, len(published))
		account(t, published, handled, rabbitDeadLetters(t, sub))
	})
	t.Run("kafka", testKilledKafka)
}

// TestConnectionsClosed closes every RabbitMQ connection from the server
// (rabbitmqctl close_all_connections) twice while publishing and consuming
// and once more while only consuming. The publisher retries failed batches
// (at least once), the consumer reconnects; duplicates are expected, losses
// are not.
func TestConnectionsClosed(t *testing.T) {
	topic := "faults.closed." + broker.NewMessageID()[:6]
	sub := rabbitSub(topic)
	b, _ := newRabbit(t, sub)
	published := ids(topic, 4000)
	c := newTally()
	stop := consume(t, b, sub, c)

	var faults sync.WaitGroup
	faults.Go(func() {
		if c.wait(len(published)/2, time.Minute) {
			closeAll(t, c)
		}
	})
	// 400 batches, at most one every 3 ms, keep a batch in flight most of
	// the time for more than a second; each close is fired without waiting
	// (rabbitmqctl takes most of a second to start).
	publishPaced(t, b, topic, published, 3*time.Millisecond, func(n int) {
		if n == len(published)/20 || n == len(published)/4 {
			faults.Go(func() { closeAll(t, c) })
		}
	})
	t.Logf("publisher: all %d published", len(published))
	faults.Wait()
	if !c.wait(len(published), time.Minute) {
		t.Errorf("%d of %d messages handled a minute after the last fault", c.distinct(), len(published))
	}
	stop()
	account(t, published, c.counts(), rabbitDeadLetters(t, sub))
}

// TestRabbitRestarted stops the RabbitMQ application for two seconds while
// messages are published and consumed (durable queues, persistent
// messages, confirms), starts it again and waits for port 5672: every
// message is handled.
func TestRabbitRestarted(t *testing.T) {
	topic := "faults.restarted." + broker.NewMessageID()[:6]
	sub := rabbitSub(topic)
	b, _ := newRabbit(t, sub)
	published := ids(topic, 600)
	c := newTally()
	stop := consume(t, b, sub, c)

	// Restart the application even when the test fails half-way.
	var restartOnce sync.Once
	restart := func() {
		restartOnce.Do(func() {
			if err := rabbitmqctl("start_app"); err != nil {
				t.Error(err)
			}
			if err := waitAMQP(time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restart)
	publishAll(t, b, topic, published, func(n int) {
		if n != len(published)/2 {
			return
		}
		t.Logf("rabbitmqctl stop_app after publishing %d, %d handled", n, c.distinct())
		if err := rabbitmqctl("stop_app"); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(2 * time.Second) // the outage
			t.Logf("rabbitmqctl start_app")
			restart()
		}()
	})
	if !c.wait(len(published), 2*time.Minute) {
		t.Errorf("%d of %d messages handled two minutes after the restart", c.distinct(), len(published))
	}
	stop()
	account(t, published, c.counts(), rabbitDeadLetters(t, sub))
}

// TestKafkaBrokerRemoved removes a broker of a three-broker kfake cluster
// while publishing (partitions get new leaders, groups may get a new
// coordinator), shuffles the partition leaders twice while consuming, then
// brings the broker back on its old port: every record is handled.
func TestKafkaBrokerRemoved(t *testing.T) { kafkaBrokerRemoved(t, kafkaSub) }

// kafkaBrokerRemoved is TestKafkaBrokerRemoved with the subscription
// subOf returns for the case's topic.
func kafkaBrokerRemoved(t *testing.T, subOf func(topic string) broker.Subscription, opts ...kfake.Opt) {
	cluster, brokers := kafkatest.Fake(t, opts...)
	topic := "faults.removed." + broker.NewMessageID()[:6]
	sub := subOf(topic)
	b := kafkatest.New(t, brokers, nil)
	if err := b.Declare(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	const removed = 2
	_, portStr, err := net.SplitHostPort(brokers[removed])
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)

	published := ids(topic, 600)
	c := newTally()
	stop := consume(t, b, sub, c)
	faults := make(chan struct{})
	go func() {
		defer close(faults)
		for _, at := range []int{len(published) / 2, 3 * len(published) / 4} {
			if !c.wait(at, time.Minute) {
				return
			}
			t.Logf("kfake: shuffle partition leaders (%d handled)", c.distinct())
			cluster.ShufflePartitionLeaders()
		}
	}()
	publishAll(t, b, topic, published, func(n int) {
		if n == len(published)/3 {
			t.Logf("kfake: remove broker %d (%d handled)", removed, c.distinct())
			if err := cluster.RemoveNode(removed); err != nil {
				t.Fatalf("remove node %d: %v", removed, err)
			}
		}
	})
	<-faults
	t.Logf("kfake: broker %d back on port %d", removed, port)
	if _, _, err := cluster.AddNode(removed, port); err != nil {
		t.Errorf("add node %d back: %v", removed, err)
	}
	if !c.wait(len(published), time.Minute) {
		t.Errorf("%d of %d records handled a minute after the last fault", c.distinct(), len(published))
	}
	stop()
	account(t, published, c.counts(), kafkaDeadLetters(t, brokers, sub))
}

// TestRedisUnreachable runs a worker (worker.Config.HeartbeatRedis: heartbeats and
// claim counts in Redis) whose Redis goes through a proxy, and takes the
// proxy down for two seconds mid-run: messages keep being handled during
// the outage, heartbeats resume after it, and so does the traffic
// published after it.
func TestRedisUnreachable(t *testing.T) {
	direct := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	t.Cleanup(func() { _ = direct.Close() })
	if err := direct.Ping(context.Background()).Err(); err != nil {
		testenv.Redis.Fail(t, err)
	}
	px := tcpproxy.New(t, testenv.Redis.URL())
	rdb := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })

	topic := "faults.redis." + broker.NewMessageID()[:6]
	group := "faults-redis-" + broker.NewMessageID()[:6]
	sub := rabbitSub(topic)
	sub.Group = group
	b, prefix := newRabbit(t, sub) // declares, and deletes the topology at the end
	yaml := fmt.Sprintf(`broker: rabbitmq
rabbitmq: {url: %q, prefix: %q, delay: {resolution: 100ms, factor: 2, levels: 3}}
heartbeat: {interval: 100ms, ttl: 2s}
workers:
  - {name: %s, topic: %s, queue_ttl: 0s, concurrency: 4, prefetch: 16, max_claims: 5, retry: {max_retries: 2, backoff: [100ms]}}
`, testenv.RabbitMQ.URL(), prefix, group, topic)
	rt, err := worker.Parse(context.Background(), []byte(yaml),
		worker.Config{HeartbeatRedis: rdb, NoSignals: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("worker.Parse: %v", err)
	}
	c := newTally()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- rt.Run(ctx, worker.Handlers{group: func(_ context.Context, d *broker.Delivery) error {
			time.Sleep(5 * time.Millisecond) // the work
			c.add(d.ID)
			return nil
		}})
	}()
	stopWorker := func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("worker Run: %v", err)
		}
	}
	defer func() {
		if ctx.Err() == nil {
			stopWorker()
		}
	}()
	defer px.SetUp(true)

	key := heartbeat.Keys{}.Heartbeat(group, heartbeat.DefaultInstance())
	waitBeat(t, direct, key, time.Time{})
	published := ids(topic, 600)
	before, after := published[:400], published[400:]
	publishAll(t, b, topic, before, nil)
	if !c.wait(len(published)/4, time.Minute) {
		t.Fatalf("%d of %d handled before the outage", c.distinct(), len(published))
	}
	px.SetUp(false)
	downAt := c.distinct()
	t.Logf("Redis unreachable (%d handled)", downAt)
	time.Sleep(2 * time.Second) // the outage
	during := c.distinct() - downAt
	px.SetUp(true)
	healed := time.Now()
	t.Logf("Redis reachable again; %d handled during the outage", during)
	if during == 0 && downAt < len(before) {
		t.Errorf("nothing handled while Redis was unreachable: processing must not depend on Redis")
	}
	waitBeat(t, direct, key, healed)
	publishAll(t, b, topic, after, nil)
	if !c.wait(len(published), time.Minute) {
		t.Errorf("%d of %d messages handled a minute after the outage", c.distinct(), len(published))
	}
	stopWorker()
	account(t, published, c.counts(), rabbitDeadLetters(t, sub))
}

// TestStoreUnreachable runs the DLQ keeper on a PostgreSQL store behind a
// proxy that is down from the start, while a worker handles half of its
// messages and dead-letters the other half: during the outage nothing is
// stored (so nothing is acknowledged), and once PostgreSQL is reachable
// every dead letter is stored, once.
func TestStoreUnreachable(t *testing.T) {
	t.Run("rabbitmq", func(t *testing.T) {
		topic := "faults.store." + broker.NewMessageID()[:6]
		sub := rabbitSub(topic)
		b, _ := newRabbit(t, sub)
		storeOutage(t, b, string(rabbit.Name), rabbit.DLQ(rabbit.Queue(topic, sub.Group)), sub)
	})
	t.Run("kafka", func(t *testing.T) {
		_, brokers := kafkatest.Fake(t)
		topic := "faults.store." + broker.NewMessageID()[:6]
		sub := kafkaSub(topic)
		b := kafkatest.New(t, brokers, nil)
		if err := b.Declare(context.Background(), sub); err != nil {
			t.Fatal(err)
		}
		storeOutage(t, b, string(kafka.Name), kafka.DLQTopic(topic), sub)
	})
}

// TestPoisonPill publishes messages one of which kills the worker process
// that handles it; the process is restarted each time (crashtest), and the
// poison pill is dead-lettered with reason max_claims after max_claims
// handler starts while every other message is handled.
func TestPoisonPill(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		testenv.Redis.Fail(t, err)
	}
	t.Run("rabbitmq", func(t *testing.T) {
		topic := "faults.poison." + broker.NewMessageID()[:6]
		sub := poisonSub(rabbitSub(topic), nil)
		b, prefix := newRabbit(t, sub)
		poisonPill(t, b, sub, childRabbit, []string{envPrefix + "=" + prefix}, func(want int) map[string]int {
			return rabbitDeadLettersWait(t, sub, want)
		})
	})
	t.Run("kafka", func(t *testing.T) {
		brokers := childCluster(t)
		topic := "faults.poison." + broker.NewMessageID()[:6]
		sub := poisonSub(kafkaSub(topic), nil)
		b := kafkatest.New(t, brokers, nil)
		if err := b.Declare(context.Background(), sub); err != nil {
			t.Fatal(err)
		}
		poisonPill(t, b, sub, childKafka, []string{envBrokers + "=" + strings.Join(brokers, ",")}, func(want int) map[string]int {
			out := map[string]int{}
			for _, e := range kafkatest.Entries(kafkatest.DeadLetters(context.Background(), t, brokers, topic, sub.Group, want, time.Second)) {
				if e.Reason != string(driver.ReasonMaxClaims) {
					t.Errorf("dead letter %s: reason %q, want %q", e.MessageID, e.Reason, driver.ReasonMaxClaims)
				}
				out[e.MessageID]++
			}
			return out
		})
	})
}
