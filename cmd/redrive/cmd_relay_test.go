package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// `redrive relay` on Kafka (kfake): the worker with an endpoint gets its
// messages POSTed (the one without is left to a Go program), the relay's
// /metrics count them by outcome, its heartbeat in Redis carries the
// endpoint's figures, and it stops cleanly; a configuration without an
// endpoint is bad input.
func TestRelayCommand(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	var got atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret-t0ken" || r.Header.Get("ce-specversion") != "1.0" {
			http.Error(w, "not the relay", http.StatusUnauthorized)
			return
		}
		got.Add(1)
	}))
	t.Cleanup(endpoint.Close)
	t.Setenv("RELAY_TOKEN", "s3cret-t0ken")
	name := "relay-" + broker.NewMessageID()[:8] // its heartbeat keys are the test's own
	listen := testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q], partitions: 1, fetch_max_wait: 100ms, commit_interval: 100ms}
redis: {addr: %q}
heartbeat: {interval: 100ms, ttl: 1s}
workers:
  - {name: %s, topic: relay-orders, endpoint: {url: "%s/events", timeout: 5s, bearer_token: "${RELAY_TOKEN}"}}
  - {name: go-worker, topic: relay-orders}
relay: {listen: %q}
`, strings.Join(cluster.ListenAddrs(), ","), testenv.Redis.URL(), name, endpoint.URL, listen))
	d := startDaemon(t, "relay", "--config", path, "--instance", "pod-1")
	for i := range 3 {
		if code, _, errOut := cli(t, "publish", "--config", path, "--topic", "relay-orders", "--data", fmt.Sprintf(`{"n":%d}`, i)); code != exitOK {
			t.Fatalf("publish: %d %s", code, errOut)
		}
	}
	eventually(t, "the endpoint gets the 3 messages", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("relay exited:\n%s", d.stderr)
		}
		return got.Load() == 3
	}, func() string { return d.stderr.String() })

	var metrics string
	series := fmt.Sprintf(`redrive_relay_requests_total{endpoint="%s/events",outcome="success",worker="%s"} 3`, endpoint.URL, name)
	eventually(t, "/metrics counts them", func() bool {
		_, metrics = httpGet("http://" + listen + "/metrics")
		return strings.Contains(metrics, series)
	}, func() string { return metrics })
	for _, want := range []string{`redrive_relay_request_duration_seconds_count{endpoint="` + endpoint.URL + `/events",worker="` + name + `"} 3`,
		`worker_handler_duration_seconds_count{worker="` + name + `"} 3`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "s3cret") {
		t.Error("/metrics shows the bearer token")
	}

	rdb := testenv.RedisClient(t)
	var hb heartbeat.Heartbeat
	eventually(t, "the heartbeat carries the endpoint", func() bool {
		v, err := rdb.Get(t.Context(), heartbeat.Keys{}.Heartbeat(name, "pod-1")).Result()
		if err != nil || json.Unmarshal([]byte(v), &hb) != nil {
			return false
		}
		return hb.Endpoint != nil && hb.Endpoint.Outcomes["success"] == 3
	}, func() string { return fmt.Sprintf("%+v", hb) })
	if hb.Endpoint.URL != endpoint.URL+"/events" || hb.Endpoint.P50 <= 0 {
		t.Errorf("heartbeat endpoint = %+v", hb.Endpoint)
	}
	if n, _ := rdb.Exists(t.Context(), heartbeat.Keys{}.Heartbeat("go-worker", "pod-1")).Result(); n != 0 {
		t.Error("the relay beats for the worker without an endpoint")
	}
	if code := d.stop(t); code != exitOK {
		t.Fatalf("relay exit status %d:\n%s", code, d.stderr)
	}

	noEndpoint := writeConfig(t, "broker: kafka\nkafka: {brokers: [\"127.0.0.1:1\"]}\nworkers: [{name: w, topic: t}]\n")
	code, _, errOut := cli(t, "relay", "--config", noEndpoint)
	if code != exitUsage || !strings.Contains(errOut, "no configured worker has an endpoint") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("relay without an endpoint: %d %q, want exit 2 with one line", code, errOut)
	}
}
