package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// `redrive serve` on Kafka (kfake): the workers of one topic share its
// DLQ "<topic>.dlq", with the most severe severity; a dead-letter envelope
// on it is kept, listed with its Kafka id and replayed.
func TestServeKafka(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q], partitions: 1}
redis: {addr: %q}
workers:
  - {name: billing, topic: orders, dlq: {severity: critical}}
  - {name: audit, topic: orders, dlq: {severity: info}}
admin: {listen: %q, token: tok-kafka}
exporter: {listen: %q}
`, strings.Join(cluster.ListenAddrs(), ","), testenv.Redis.URL(), adminAddr, metricsAddr))
	if _, err := config.Load(path); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "serve", "--config", path, "--data", t.TempDir()+"/dlq.journal", "--sample-interval", "100ms")
	var out, errOut string
	eventually(t, "serve lists orders.dlq", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("serve exited:\n%s", d.stderr)
		}
		var code int
		code, out, errOut = cli(t, "dlq", "ls", "--config", path)
		return code == exitOK && strings.Contains(out, "orders.dlq ")
	}, func() string { return out + errOut + d.stderr.String() })
	if row := fields(out, "orders.dlq "); len(row) < 3 || row[1] != "critical" || row[2] != "0" || strings.Count(out, "\n") != 2 {
		t.Fatalf("dlq ls = %q, want one DLQ orders.dlq, critical, nothing pending", out)
	}

	// A dead letter as a worker writes it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	env, err := kafka.EncodeEnvelope(dlq.Entry{MessageID: "m-1", OriginalTopic: "orders", OriginalPartition: 0, OriginalOffset: 7,
		OriginalKey: []byte("deal-7"), OriginalValue: []byte(`{"amount":7}`), ErrorClass: "bank.Rejected", ErrorMessage: "rejected",
		Reason: "permanent", Worker: "billing", Source: "orders", LastFailureAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "orders.dlq", Key: []byte("deal-7"), Value: env}).FirstErr(); err != nil {
		t.Fatalf("produce the dead letter: %v", err)
	}
	eventually(t, "the dead letter is pending", func() bool {
		_, out, errOut = cli(t, "dlq", "ls", "--config", path)
		row := fields(out, "orders.dlq ")
		return len(row) > 2 && row[2] == "1"
	}, func() string { return out + errOut + d.stderr.String() })
	_, out, _ = cli(t, "dlq", "ls", "orders.dlq", "--config", path)
	row := fields(out, "0-")
	if len(row) < 2 || row[1] != "pending" {
		t.Fatalf("dlq ls orders.dlq = %q, want an entry with a Kafka id {partition}-{offset}", out)
	}
	id := row[0]
	if v, ok := metricValue(t, "http://"+metricsAddr, "worker_dlq_messages_total", map[string]string{"dlq": "orders.dlq", "severity": "critical"}); !ok || v != 1 {
		t.Errorf("worker_dlq_messages_total{orders.dlq,critical} = %v (present %v), want 1", v, ok)
	}
	const dest = "topic orders.retry.billing (worker billing)"
	if code, out, errOut := cli(t, "dlq", "replay", "orders.dlq", id, "--config", path); code != exitOK || !strings.Contains(out, " to "+dest+" ") {
		t.Fatalf("dlq replay: %d %q %s; want it to name %q", code, out, errOut, dest)
	}

	// The replay is back, byte for byte, marked: on the topic, or on the
	// retry topic of the group that gave up (the backend's choice).
	rd, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("orders", kafka.RetryTopic("orders", "billing")),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("the replay did not reach orders or its retry topic: %v", err)
		}
		var found *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == broker.HeaderReplayedFrom && string(h.Value) == "orders.dlq/"+id {
					found = r
				}
			}
		})
		if found != nil {
			if string(found.Key) != "deal-7" || string(found.Value) != `{"amount":7}` || found.Topic != kafka.RetryTopic("orders", "billing") {
				t.Errorf("replayed record = topic %s key %q value %q; want the topic the CLI named", found.Topic, found.Key, found.Value)
			}
			break
		}
	}
	code, h := healthz(t, "http://"+metricsAddr)
	if code != http.StatusOK || h.Components.Broker.Status != "UP" {
		t.Errorf("/healthz = %d %+v", code, h)
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, d.stderr)
	}
}
