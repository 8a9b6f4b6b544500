package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// gateWorker parses a one-worker configuration on RabbitMQ under names of
// the test's own (removed when it ends) with extra YAML for the worker.
func gateWorker(t *testing.T, rdb *redis.Client, extra string, cfg worker.Config) (rt *worker.Runtime, name, topic string) {
	t.Helper()
	cfg.HeartbeatRedis = rdb
	id := broker.NewMessageID()[:6]
	name, topic = "gate-worker-"+id, "worker-test.gate."+id
	yaml := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
heartbeat: {interval: 100ms, ttl: 3s, instance: pod-%s}
workers:
  - {name: %s, topic: %s, concurrency: 2, prefetch: 2, retry: {max_retries: 1, backoff: 100ms}%s}
`, id, id, name, topic, extra)
	rt, err := worker.Parse(t.Context(), []byte(yaml), quiet(cfg))
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	teardown(t, yaml)
	t.Cleanup(func() {
		ctx := context.Background()
		keys := heartbeat.Keys{}
		rdb.Del(ctx, keys.Paused(name), keys.Registry(name), keys.Stopping(name), keys.Heartbeat(name, "pod-"+id))
		rdb.SRem(ctx, keys.Types(), name)
	})
	if err := rt.Broker().Declare(t.Context(), rt.Subscriptions()...); err != nil {
		t.Fatal(err)
	}
	return rt, name, topic
}

// run runs rt with h until the test ends or stop is called.
func run(t *testing.T, rt *worker.Runtime, name string, h broker.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx, worker.Handlers{name: h}) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func publishN(t *testing.T, rt *worker.Runtime, topic, prefix string, n int) {
	t.Helper()
	msgs := make([]broker.Message, n)
	for i := range msgs {
		msgs[i] = broker.Message{ID: fmt.Sprint(prefix, i), Value: []byte("x")}
	}
	if err := rt.Broker().Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestKillSwitchHoldsAnOutage: every call fails until the kill switch
// trips (the heartbeat says PAUSED by kill_switch with the next probe);
// then the downstream recovers. Every message is handled once
// successfully and none is dead-lettered: only those that failed before
// the switch could trip spent an attempt; with max_retries 1 the outage
// would otherwise have dead-lettered them.
func TestKillSwitchHoldsAnOutage(t *testing.T) {
	rdb := testenv.RedisClient(t)
	reg := prometheus.NewRegistry()
	rt, name, topic := gateWorker(t, rdb,
		", kill_switch: {enabled: true, activation: 4, trip_ratio: 0.5, window: 5s, restart_after: 200ms, max_restart_after: 400ms}",
		worker.Config{Registerer: reg})
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	ok := map[string]int{}
	attempts := map[string][]int{}
	run(t, rt, name, func(_ context.Context, d *broker.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[d.ID] = append(attempts[d.ID], d.Attempt)
		if down.Load() {
			return errors.New("payment API unreachable")
		}
		ok[d.ID]++
		return nil
	})
	const n = 40
	publishN(t, rt, topic, "m", n)
	key := heartbeat.Keys{}.Heartbeat(name, rt.Instance())
	waitHeartbeat(t, rdb, key, "PAUSED by the kill switch", func(h heartbeatJSON) bool {
		return h.Status == "PAUSED" && h.PausedBy == "kill_switch" && h.NextProbeAt != ""
	})
	down.Store(false) // the downstream recovers
	waitHeartbeat(t, rdb, key, "RUNNING again", func(h heartbeatJSON) bool { return h.Status == "RUNNING" })
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		handled := len(ok)
		mu.Unlock()
		if handled == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages handled", handled, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// The failures before the switch had seen activation (4) calls are
	// ordinary retries: at most 3 messages spent an attempt.
	spent := 0
	for id, as := range attempts {
		if ok[id] != 1 {
			t.Errorf("%s succeeded %d times", id, ok[id])
		}
		if slices.Max(as) > 1 {
			spent++
		}
	}
	if spent > 3 {
		t.Errorf("%d messages spent an attempt, want at most 3 (those that failed before the switch could trip)", spent)
	}
	if d := depth(t, rabbit.DLQ(rabbit.Queue(topic, name))); d != 0 {
		t.Errorf("%d dead letters, want 0", d)
	}
	if trips := counter(t, reg, "worker_kill_switch_trips_total", name); trips < 1 {
		t.Errorf("worker_kill_switch_trips_total = %v, want >= 1", trips)
	}
}

// TestKillSwitchIgnoresPermanentFailures: a burst of Permanent failures
// dead-letters its messages and never pauses the worker.
func TestKillSwitchIgnoresPermanentFailures(t *testing.T) {
	rdb := testenv.RedisClient(t)
	reg := prometheus.NewRegistry()
	rt, name, topic := gateWorker(t, rdb,
		", kill_switch: {enabled: true, activation: 4, trip_ratio: 0.5, window: 5s, restart_after: 10s}",
		worker.Config{Registerer: reg})
	var calls atomic.Int64
	run(t, rt, name, func(context.Context, *broker.Delivery) error {
		calls.Add(1)
		return broker.Permanent(errors.New("malformed payload"))
	})
	const n = 20
	publishN(t, rt, topic, "bad", n)
	dlq := rabbit.DLQ(rabbit.Queue(topic, name))
	deadline := time.Now().Add(30 * time.Second)
	for depth(t, dlq) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d dead-lettered (%d calls)", depth(t, dlq), n, calls.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c := calls.Load(); c != n {
		t.Errorf("%d calls, want %d", c, n)
	}
	if trips := counter(t, reg, "worker_kill_switch_trips_total", name); trips != 0 {
		t.Errorf("worker_kill_switch_trips_total = %v, want 0", trips)
	}
	if hb := readHeartbeat(t, rdb, heartbeat.Keys{}.Heartbeat(name, rt.Instance())); hb.Status != "RUNNING" {
		t.Errorf("heartbeat %+v, want RUNNING", hb)
	}
}

// TestOperatorPause: a worker paused before it starts (as after a
// restart) takes no message, not even into its prefetch; resumed, it
// handles them all; paused again while running, it stops consuming within
// the poll interval.
func TestOperatorPause(t *testing.T) {
	rdb := testenv.RedisClient(t)
	rt, name, topic := gateWorker(t, rdb, "", worker.Config{PausePoll: 100 * time.Millisecond})
	rdb.SAdd(t.Context(), heartbeat.Keys{}.Types(), name) // as if it had run before
	ps := heartbeat.Pauses{RDB: rdb}
	if _, err := ps.Pause(t.Context(), name, "test", "bank maintenance"); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	run(t, rt, name, func(context.Context, *broker.Delivery) error { handled.Add(1); return nil })
	const n = 10
	publishN(t, rt, topic, "m", n)
	key := heartbeat.Keys{}.Heartbeat(name, rt.Instance())
	// The consumer does not consume while paused: every message waits
	// in the queue, none prefetched.
	waitHeartbeat(t, rdb, key, "PAUSED by the operator with the messages waiting", func(h heartbeatJSON) bool {
		return h.Status == "PAUSED" && h.PausedBy == "operator" && h.PauseReason == "bank maintenance" && h.ConsumerLag == n
	})
	if h := handled.Load(); h != 0 {
		t.Fatalf("%d messages handled while paused", h)
	}
	if _, err := ps.Resume(t.Context(), name, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every message handled after the resume", func() bool { return handled.Load() == n })
	waitHeartbeat(t, rdb, key, "RUNNING after the resume", func(h heartbeatJSON) bool { return h.Status == "RUNNING" })

	if _, err := ps.Pause(t.Context(), name, "test", "again"); err != nil {
		t.Fatal(err)
	}
	waitHeartbeat(t, rdb, key, "PAUSED again", func(h heartbeatJSON) bool { return h.Status == "PAUSED" && h.PauseReason == "again" })
	publishN(t, rt, topic, "late", n)
	waitHeartbeat(t, rdb, key, "the late messages waiting in the queue", func(h heartbeatJSON) bool { return h.ConsumerLag == n })
	if h := handled.Load(); h != n {
		t.Fatalf("%d messages handled, want %d: the pause let some through", h, n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// depth is the number of messages ready in queue.
func depth(t *testing.T, queue string) int {
	t.Helper()
	ch := amqpChannel(t)
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

func amqpChannel(t *testing.T) *amqp.Channel {
	return testenv.AMQP(t)
}
