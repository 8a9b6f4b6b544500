package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// kafkaCluster is a kfake cluster whose topic "orders" (2 partitions)
// holds 4 + 3 records, and whose group "billing" committed 1 and 0: lag 6.
func kafkaCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for p, n := range map[int32]int{0: 4, 1: 3} {
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	var offs kadm.Offsets
	offs.AddOffset("orders", 0, 1, -1)
	offs.AddOffset("orders", 1, 0, -1)
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "billing", offs); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return c.ListenAddrs()
}

func kafkaConfig(t *testing.T, addrs []string, extra string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q]}
redis: {addr: %q}
workers: [{name: billing, topic: orders, dlq: {severity: critical}}]
lag: {thresholds: {orders: {warning: 5, critical: 50}}}
%s`, strings.Join(addrs, ","), testenv.Redis.URL(), extra))
}

func TestLagKafka(t *testing.T) {
	clearEnv(t)
	path := kafkaConfig(t, kafkaCluster(t), "")
	code, out, errOut := cli(t, "lag", "--config", path)
	row := fields(out, "billing ")
	// GROUP TOPIC PARTITIONS MEMBERS LAG LAG-AGE LEVEL STATUS REASON
	if code != exitOK || !strings.HasPrefix(out, "GROUP ") || len(row) < 8 || row[1] != "orders" || row[2] != "2" || row[4] != "6" || row[6] != "WARNING" {
		t.Fatalf("lag: %d, row %v\n%s%s", code, row, out, errOut)
	}
	code, out, _ = cli(t, "lag", "--partitions", "--config", path)
	p0, p1 := fields(out, "billing  orders  0 "), fields(out, "billing  orders  1 ")
	// GROUP TOPIC PARTITION COMMITTED END LAG …
	if code != exitOK || len(p0) < 6 || len(p1) < 6 || p0[3] != "1" || p0[4] != "4" || p0[5] != "3" || p1[3] != "0" || p1[5] != "3" {
		t.Errorf("lag --partitions: %d\n%s", code, out)
	}
	// Nothing listens: exit 1, one line.
	code, _, errOut = cli(t, "lag", "--timeout", "2s", "--config", kafkaConfig(t, []string{testenv.ClosedAddr(t)}, ""))
	if code != exitFailure || !strings.Contains(errOut, "measure kafka lag") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("lag on a closed port: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, "lag", "--partitions", "--config", writeConfig(t, "broker: rabbitmq\n")); code != exitUsage || !strings.Contains(errOut, "--partitions is for a broker measured by consumer-group offsets") {
		t.Errorf("lag --partitions on rabbitmq: %d %q", code, errOut)
	}
}

// `redrive exporter` on a Kafka cluster: the group's lag on /metrics and
// /healthz, and the DLQ counts of a PostgreSQL store (the topic's DLQ,
// nothing pending); it stops cleanly.
func TestExporterKafka(t *testing.T) {
	clearEnv(t)
	addr := testenv.ClosedAddr(t)
	pg := newSchema(t, "exporter_cmd_"+strings.ToLower(broker.NewMessageID()[:8]))
	path := kafkaConfig(t, kafkaCluster(t), fmt.Sprintf("postgres: {url: %q}\nexporter: {listen: \"127.0.0.1:1\"}\n", pg))
	d := startDaemon(t, "exporter", "--config", path, "--listen", addr, "--sample-interval", "100ms")
	base := "http://" + addr
	eventually(t, "the exporter is ready", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("exporter exited:\n%s", d.stderr)
		}
		code, _ := httpGet(base + "/readyz")
		return code == http.StatusOK
	}, d.stderr.String)
	if v, ok := metricValue(t, base, "kafka_consumer_lag", map[string]string{"group": "billing", "topic": "orders"}); !ok || v != 6 {
		t.Errorf("kafka_consumer_lag{billing,orders} = %v (present %v), want 6", v, ok)
	}
	// The store opens lazily: its counts show up after its first sample.
	eventually(t, "the DLQ counts", func() bool {
		_, ok := metricValue(t, base, "redrive_dlq_pending", map[string]string{"dlq": "orders.dlq"})
		return ok
	}, d.stderr.String)
	if v, ok := metricValue(t, base, "redrive_dlq_pending", map[string]string{"dlq": "orders.dlq"}); !ok || v != 0 {
		t.Errorf("redrive_dlq_pending{orders.dlq} = %v (present %v), want 0", v, ok)
	}
	code, h := healthz(t, base)
	if code != http.StatusOK || h.Status != "DEGRADED" || h.Components.Broker.Status != "UP" || !strings.Contains(strings.Join(h.Reasons, "\n"), "lag billing/orders: 6 behind, level WARNING") {
		t.Errorf("/healthz = %d %+v", code, h)
	}
	if n, ok := h.Components.DLQ["orders.dlq"]; !ok || n != 0 {
		t.Errorf("dlq component = %v, want orders.dlq: 0", h.Components.DLQ)
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("exporter exited %d:\n%s", code, d.stderr)
	}
}

func TestWorkersRedisUnreachable(t *testing.T) {
	clearEnv(t)
	path := writeConfig(t, fmt.Sprintf("broker: rabbitmq\nredis: {addr: %q}\n", testenv.ClosedAddr(t)))
	code, out, errOut := cli(t, "workers", "--config", path)
	if code != exitFailure || out != "" || !strings.HasPrefix(errOut, "redrive: workers: cannot read heartbeats from redis at ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("workers with Redis down = %d %q %q, want exit 1 and one line", code, out, errOut)
	}
}

func TestExporterBadInput(t *testing.T) {
	clearEnv(t)
	path := writeConfig(t, "broker: rabbitmq\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "9477"}, `--listen "9477" is not host:port`},
		{[]string{"--sample-interval", "-1s"}, "--sample-interval -1s is negative"},
	} {
		code, _, errOut := cli(t, append([]string{"exporter", "--config", path}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("exporter %v = %d %q, want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

// The exit of `redrive workers` follows the worst severity of the
// configured workers; other worker types are shown but do not count.
func TestWorkersExit(t *testing.T) {
	row := func(typ string, s heartbeat.Severity) heartbeat.WorkerStatus {
		return heartbeat.WorkerStatus{Type: typ, Severity: s}
	}
	tests := []struct {
		rows       []heartbeat.WorkerStatus
		configured []string
		want       int
	}{
		{nil, nil, exitOK},
		{[]heartbeat.WorkerStatus{row("a", heartbeat.SeverityOK)}, []string{"a"}, exitOK},
		{[]heartbeat.WorkerStatus{row("a", heartbeat.SeverityOK), row("a", heartbeat.SeverityWarning)}, []string{"a"}, exitWarning},
		{[]heartbeat.WorkerStatus{row("a", heartbeat.SeverityWarning), row("b", heartbeat.SeverityCritical)}, []string{"a", "b"}, exitCritical},
		{[]heartbeat.WorkerStatus{row("a", heartbeat.SeverityOK), row("stale", heartbeat.SeverityCritical)}, []string{"a"}, exitOK},
		{[]heartbeat.WorkerStatus{row("stale", heartbeat.SeverityCritical)}, nil, exitCritical},
	}
	for i, tt := range tests {
		if got := exitCode(workersExit(tt.rows, tt.configured)); got != tt.want {
			t.Errorf("%d: exit %d, want %d", i, got, tt.want)
		}
	}
}
