package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// These tests live here rather than in package worker because they run
// on both backends, as the end-to-end suite does.

// probe GETs path of the health server and returns the status code and
// body ("" and 0 when it does not answer).
func probe(addr, path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// waitProbe polls path until it answers code, for up to 30 s.
func waitProbe(t *testing.T, rt *worker.Runtime, path string, code int, what string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got int
	var body string
	for time.Now().Before(deadline) {
		if addr := rt.HealthAddr(); addr != "" {
			if got, body = probe(addr, path); got == code {
				return body
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s answered %d %q, want %d", what, path, got, body, code)
	return ""
}

// TestHealthProbesRabbitMQ: /readyz follows the worker's connection (cut
// and restored through a proxy, the shared RabbitMQ untouched) and turns
// 503 as soon as shutdown starts, while /livez stays 200 until the end.
func TestHealthProbesRabbitMQ(t *testing.T) {
	u, err := neturl.Parse(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatal(err)
	}
	px := tcpproxy.New(t, u.Host)
	u.Host = px.Addr()
	id := broker.NewMessageID()[:6]
	name, topic := "health-"+id, "worker-test.health."+id
	rt, err := worker.Parse(t.Context(), []byte(fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: worker-test, delay: {resolution: 100ms, factor: 2, levels: 2}}
health: {listen: "127.0.0.1:0"}
workers:
  - {name: %s, topic: %s, retry: {max_retries: 1, backoff: 100ms}}
`, u.String(), name, topic)), worker.Config{NoSignals: true, Logger: quietLogger()})
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() {
		deleteTopology(t, []rabbit.Declaration{{Kind: "queue", Name: rabbit.Queue(topic, name)}, {Kind: "queue", Name: rabbit.DLQ(rabbit.Queue(topic, name))}})
	})
	stalled, release := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- rt.Run(ctx, worker.Handlers{name: func(context.Context, *broker.Delivery) error {
			close(stalled)
			<-release
			return nil
		}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitProbe(t, rt, "/readyz", http.StatusOK, "consuming")
	waitProbe(t, rt, "/livez", http.StatusOK, "consuming")

	px.SetUp(false) // RabbitMQ unreachable for this worker
	body := waitProbe(t, rt, "/readyz", http.StatusServiceUnavailable, "connection cut")
	if !strings.Contains(body, name) {
		t.Errorf("/readyz body %q does not name the worker", body)
	}
	waitProbe(t, rt, "/livez", http.StatusOK, "connection cut (the consumer reconnects; the process lives)")
	px.SetUp(true)
	waitProbe(t, rt, "/readyz", http.StatusOK, "connection restored")

	if err := rt.Broker().Publish(t.Context(), topic, broker.Message{Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	<-stalled
	cancel() // graceful shutdown starts; the handler still runs
	body = waitProbe(t, rt, "/readyz", http.StatusServiceUnavailable, "draining")
	if !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while draining = %q, want it to say shutting down", body)
	}
	waitProbe(t, rt, "/livez", http.StatusOK, "draining")
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	done <- nil // for the cleanup
	if code, _ := probe(rt.HealthAddr(), "/livez"); code != 0 {
		t.Errorf("the health server still answers (%d) after Run returned", code)
	}
}

// TestHealthProbesKafka: /readyz turns 503 while the (one-broker, kfake)
// cluster is gone and 200 once a broker is back on the same address.
func TestHealthProbesKafka(t *testing.T) {
	dir := t.TempDir()
	start := func(port int) *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir))
		if err != nil {
			t.Fatalf("kfake: %v", err)
		}
		return c
	}
	c := start(0)
	addr := c.ListenAddrs()[0]
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	t.Cleanup(func() { c.Close() })

	rt, err := worker.Parse(t.Context(), []byte(fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q], fetch_max_wait: 100ms, heartbeat_interval: 100ms, commit_interval: 100ms}
health: {listen: "127.0.0.1:0"}
workers:
  - {name: health-kafka, topic: health.kafka}
`, addr)), worker.Config{NoSignals: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- rt.Run(ctx, worker.Handlers{"health-kafka": func(context.Context, *broker.Delivery) error { return nil }})
	}()
	waitProbe(t, rt, "/readyz", http.StatusOK, "consuming")

	c.Close() // the broker is removed
	body := waitProbe(t, rt, "/readyz", http.StatusServiceUnavailable, "broker removed")
	if !strings.Contains(body, "health-kafka") {
		t.Errorf("/readyz body %q does not name the worker", body)
	}
	waitProbe(t, rt, "/livez", http.StatusOK, "broker removed")
	c = start(port) // back on the same address, with its data
	waitProbe(t, rt, "/readyz", http.StatusOK, "broker back")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return")
	}
}
