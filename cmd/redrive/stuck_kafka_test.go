package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestStuckWorkerKafka is the stall part of TestAlertsLive on Kafka: a
// worker process whose handler stalls while records keep arriving reports
// its lag in Redis (from its client's fetch state), reads stuck in
// `redrive workers`, in the console's Workers page and in the exporter's
// redrive_worker_status once heartbeat.idle_after passed, and is OK with
// no lag again once it recovers.
func TestStuckWorkerKafka(t *testing.T) { stuckWorkerKafka(t, broker.Blocking, 4) }

// TestStuckWorkerKafkaShare is TestStuckWorkerKafka in share mode, with a
// second handler: the three records behind the stalled one are handled by
// it (no order within a partition), and the lag the heartbeat reports is
// the share group's from the cluster: the stalled record alone. Stuck
// means the same: no message for idle_after while lag is above 0.
func TestStuckWorkerKafkaShare(t *testing.T) { stuckWorkerKafka(t, broker.Share, 1) }

// stuckWorkerKafka runs the stall case with a worker of retry mode mode,
// whose heartbeat must report lag while its handler stalls.
func stuckWorkerKafka(t *testing.T, mode broker.RetryMode, lag int64) {
	clearEnv(t)
	concurrency := 1
	if mode == broker.Share {
		concurrency = 2
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	id := strings.ToLower(broker.NewMessageID()[:8])
	name, topic, pod, dir := "stall-"+id, "stuck."+id, "k-"+id, t.TempDir()
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q], fetch_max_wait: 100ms, commit_interval: 100ms}
redis: {addr: %q}
heartbeat: {interval: 300ms, ttl: 1s, missing_after: 3s, idle_after: 2s, instance: "${%s}"}
workers:
  - {name: %s, topic: %s, concurrency: %d, retry: {backoff: 100ms, mode: %s}}
admin: {listen: %q}
exporter: {listen: %q}
`, strings.Join(cluster.ListenAddrs(), ","), testenv.Redis.URL(), envLivePod, name, topic, concurrency, mode, adminAddr, metricsAddr))
	rdb := newRedisClient(t)
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.Del(ctx, "worker:"+name+":"+pod, "workers:"+name, "workers:"+name+":stopping")
		rdb.SRem(ctx, "workers", name)
	})
	startDaemon(t, "serve", "--config", path, "--insecure-no-auth", "--data", filepath.Join(dir, "dlq.journal"), "--sample-interval", "300ms")
	startLiveWorker(t, path, pod, dir)

	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openBroker(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var msgs []broker.Message
	for _, v := range []string{"stall", "a", "b", "c"} {
		msgs = append(msgs, broker.Message{Key: []byte("one-partition"), Value: []byte(v)})
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}

	// The stalled record and the three behind it (blocking), or the
	// stalled one alone (share).
	key := "worker:" + name + ":" + pod
	var raw string
	eventually(t, fmt.Sprintf("consumer_lag %d in the heartbeat", lag), func() bool {
		raw, _ = rdb.Get(t.Context(), key).Result()
		var hb heartbeat.Heartbeat
		return hb.UnmarshalJSON([]byte(raw)) == nil && hb.ConsumerLag == lag
	}, func() string { return raw })
	while := fmt.Sprintf("while lag is %d", lag)
	var out string
	eventually(t, "redrive workers shows the instance stuck", func() bool {
		var code int
		code, out, _ = cli(t, "workers", "--config", path)
		f := fields(out, name+" ")
		return code == exitWarning && len(f) > 3 && f[1] == pod && f[3] == "WARNING" && strings.Contains(out, while)
	}, func() string { return out })
	var page string
	eventually(t, "the console shows the instance stuck", func() bool {
		var code int
		code, page = httpGet("http://" + adminAddr + "/workers")
		return code == http.StatusOK && strings.Contains(page, pod) && strings.Contains(page, while)
	}, func() string { return page })
	stuck := map[string]string{"type": name, "worker_instance": pod, "condition": "stuck"}
	eventually(t, "the exporter exports the stuck condition", func() bool {
		v, ok := metricValue(t, "http://"+metricsAddr, heartbeat.MetricWorkerStatus, stuck)
		return ok && v == 1
	}, func() string { return "" })

	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "OK with no lag once the handler recovered", func() bool {
		_, ok := metricValue(t, "http://"+metricsAddr, heartbeat.MetricWorkerStatus, stuck)
		v, okOK := metricValue(t, "http://"+metricsAddr, heartbeat.MetricWorkerStatus,
			map[string]string{"type": name, "worker_instance": pod, "condition": "ok"})
		raw, _ = rdb.Get(t.Context(), key).Result()
		return !ok && okOK && v == 1 && strings.Contains(raw, `"consumer_lag":0`)
	}, func() string { return raw })
}
