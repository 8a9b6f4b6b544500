package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// TestHeartbeatsFromTheConfiguration: a runtime from Parse whose
// configuration has a redis: section beats there without
// Config.HeartbeatRedis, under redis.prefix, and says so at start; one
// without the section says it has no heartbeats.
func TestHeartbeatsFromTheConfiguration(t *testing.T) {
	rdb := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, rdb)
	id := broker.NewMessageID()[:6]
	name := "cfg-hb-" + id
	body := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s}
heartbeat: {interval: 100ms, ttl: 2s, instance: pod-%s}
workers:
  - {name: %s, topic: worker-test.cfghb.%s}
`, id, id, name, id)
	withRedis := body + fmt.Sprintf("redis: {addr: %q, prefix: %q}\n", testenv.Redis.URL(), prefix)
	teardown(t, withRedis)

	for _, tc := range []struct {
		name, yaml string
		beats      bool
	}{{"with redis:", withRedis, true}, {"without redis:", body, false}} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testenv.Logs{}
			rt, err := worker.Parse(t.Context(), []byte(tc.yaml), worker.Config{NoSignals: true, Logger: slog.New(logs)})
			if err != nil {
				testenv.RabbitMQ.Fail(t, err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- rt.Run(ctx, worker.Handlers{name: func(context.Context, *broker.Delivery) error { return nil }})
			}()
			key := heartbeat.Keys{Prefix: prefix}.Heartbeat(name, "pod-"+id)
			testenv.Eventually(t, 10*time.Second, "the worker consuming", func() bool { return logs.Count(slog.LevelInfo, "worker: consuming") > 0 })
			if tc.beats {
				testenv.Eventually(t, 10*time.Second, "a heartbeat at "+key, func() bool { return rdb.Exists(t.Context(), key).Val() == 1 })
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			said := strings.Join(logs.All(), "\n")
			switch {
			case tc.beats && !strings.Contains(said, "heartbeats to redis") || tc.beats && !strings.Contains(said, key[:len(prefix)]):
				t.Errorf("the start does not say where heartbeats go:\n%s", said)
			case !tc.beats && !strings.Contains(said, "no heartbeats: the configuration has no redis: section"):
				t.Errorf("the start does not say there are no heartbeats:\n%s", said)
			case !tc.beats && rdb.Exists(t.Context(), key).Val() != 0:
				t.Errorf("a configuration without redis: beat")
			}
		})
	}
}
