package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// TestRuntimeHeartbeatAndMetrics: while Run runs each worker beats in
// Redis under its configured instance name (heartbeat.instance, expanded
// from the environment), reporting its consumer lag; handler latency and
// retries are exported; while it drains the heartbeat says SHUTTING_DOWN;
// a clean stop removes the heartbeat.
func TestRuntimeHeartbeatAndMetrics(t *testing.T) {
	rdb := testenv.RedisClient(t)
	id := broker.NewMessageID()[:6]
	name, topic := "hb-worker-"+id, "worker-test.hb."+id
	t.Setenv("REDRIVE_TEST_POD", "pod-"+id)
	reg := prometheus.NewRegistry()
	yaml := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
heartbeat: {interval: 200ms, ttl: 3s, instance: "${REDRIVE_TEST_POD}"}
workers:
  - {name: %s, topic: %s, concurrency: 1, prefetch: 1, retry: {max_retries: 2, backoff: 100ms}}
`, id, name, topic)
	rt, err := worker.Parse(t.Context(), []byte(yaml), quiet(worker.Config{Registerer: reg, HeartbeatRedis: rdb}))
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	teardown(t, yaml)
	if rt.Instance() != "pod-"+id {
		t.Fatalf("Instance() = %q, want the configured pod-%s", rt.Instance(), id)
	}
	handled := make(chan string, 10)
	stalled, release := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- rt.Run(ctx, worker.Handlers{name: func(_ context.Context, d *broker.Delivery) error {
			if d.ID == "stall" {
				close(stalled)
				<-release // a handler that ignores its context, as many do
				return nil
			}
			if d.Attempt == 1 && d.ID == "m1" {
				return errors.New("first try fails")
			}
			handled <- d.ID
			return nil
		}})
	}()
	if err := rt.Broker().Declare(t.Context(), rt.Subscriptions()...); err != nil {
		t.Fatal(err)
	}
	if err := rt.Broker().Publish(t.Context(), topic, broker.Message{ID: "m1", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-handled:
	case <-time.After(30 * time.Second):
		t.Fatal("message not handled")
	}
	key := "worker:" + name + ":pod-" + id
	if hb := readHeartbeat(t, rdb, key); hb.Status != "RUNNING" {
		t.Fatalf("heartbeat %s = %+v, want status RUNNING", key, hb)
	}
	if got := counter(t, reg, "worker_retry_total", name); got != 1 {
		t.Errorf("worker_retry_total = %v, want 1", got)
	}

	// The handler stalls; what arrives behind it is the lag.
	msgs := []broker.Message{{ID: "stall", Value: []byte("x")}}
	for i := range 4 {
		msgs = append(msgs, broker.Message{ID: fmt.Sprint("behind-", i), Value: []byte("x")})
	}
	if err := rt.Broker().Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	<-stalled
	// prefetch 1: the stalled delivery is unacked, the 4 behind it ready.
	waitHeartbeat(t, rdb, key, "consumer_lag 4 while the handler stalls", func(h heartbeatJSON) bool {
		return h.Status == "RUNNING" && h.ConsumerLag == 4 && h.LastMessageAt != ""
	})

	cancel()
	waitHeartbeat(t, rdb, key, "SHUTTING_DOWN while the stalled handler drains", func(h heartbeatJSON) bool {
		return h.Status == "SHUTTING_DOWN"
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) while a handler was still running", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n, _ := rdb.Exists(t.Context(), key).Result(); n != 0 {
		t.Errorf("heartbeat %s still there after a clean stop", key)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "worker_handler_duration_seconds" {
			if c := mf.GetMetric()[0].GetHistogram().GetSampleCount(); c != 3 {
				t.Errorf("handler duration samples = %d, want 3 (m1 twice, stall)", c)
			}
			return
		}
	}
	t.Error("worker_handler_duration_seconds not exported")
}

// heartbeatJSON is the wire form of a heartbeat, as a foreign reader sees it.
type heartbeatJSON struct {
	Status        string `json:"status"`
	LastMessageAt string `json:"last_message_at"`
	ConsumerLag   int64  `json:"consumer_lag"`
	PausedBy      string `json:"paused_by"`
	PauseReason   string `json:"pause_reason"`
	NextProbeAt   string `json:"next_probe_at"`
}

func readHeartbeat(t *testing.T, rdb *redis.Client, key string) heartbeatJSON {
	t.Helper()
	raw, err := rdb.Get(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	var hb heartbeatJSON
	if err := json.Unmarshal([]byte(raw), &hb); err != nil {
		t.Fatalf("heartbeat %s = %q: %v", key, raw, err)
	}
	return hb
}

// waitHeartbeat polls key until ok holds, for up to 30 s.
func waitHeartbeat(t *testing.T, rdb *redis.Client, key, what string, ok func(heartbeatJSON) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		raw, err := rdb.Get(t.Context(), key).Result()
		var hb heartbeatJSON
		if err == nil && json.Unmarshal([]byte(raw), &hb) == nil && ok(hb) {
			return
		}
		last = raw
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; heartbeat %s = %s", what, key, last)
}

// counter reads the value of the counter of worker in the family name.
func counter(t *testing.T, reg *prometheus.Registry, name, worker string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "worker" && l.GetValue() == worker {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{worker=%q} not exported", name, worker)
	return 0
}

// TestRuntimesShareRegistry: two runtimes exporting through one registry
// (as `redrive dev` runs its sample workers) both start, and both
// runtimes' retries are counted.
func TestRuntimesShareRegistry(t *testing.T) {
	rdb := testenv.RedisClient(t)
	reg := prometheus.NewRegistry()
	id := broker.NewMessageID()[:6]
	type run struct {
		name, topic string
		rt          *worker.Runtime
		handled     chan struct{}
	}
	var runs []*run
	for i := range 2 {
		r := &run{name: fmt.Sprintf("share-%d-%s", i, id), topic: fmt.Sprintf("worker-test.share%d.%s", i, id), handled: make(chan struct{}, 1)}
		var err error
		yaml := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers:
  - {name: %s, topic: %s, retry: {max_retries: 2, backoff: 100ms}}
`, id, r.name, r.topic)
		r.rt, err = worker.Parse(t.Context(), []byte(yaml), quiet(worker.Config{Registerer: reg, ClaimsRedis: rdb}))
		if err != nil {
			testenv.RabbitMQ.Fail(t, err)
		}
		teardown(t, yaml)
		runs = append(runs, r)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, len(runs))
	for _, r := range runs {
		go func() {
			done <- r.rt.Run(ctx, worker.Handlers{r.name: func(_ context.Context, d *broker.Delivery) error {
				if d.Attempt == 1 {
					return errors.New("first try fails")
				}
				r.handled <- struct{}{}
				return nil
			}})
		}()
	}
	for _, r := range runs {
		if err := r.rt.Broker().Declare(t.Context(), r.rt.Subscriptions()...); err != nil {
			t.Fatal(err)
		}
		if err := r.rt.Broker().Publish(t.Context(), r.topic, broker.Message{Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		select {
		case <-r.handled:
		case err := <-done:
			t.Fatalf("a runtime stopped early: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: message not handled", r.name)
		}
		if got := counter(t, reg, "worker_retry_total", r.name); got != 1 {
			t.Errorf("worker_retry_total{worker=%q} = %v, want 1", r.name, got)
		}
	}
	cancel()
	for range runs {
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
