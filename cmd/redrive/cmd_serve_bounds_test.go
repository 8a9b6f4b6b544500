package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestServeBoundsForeignTexts (issue 40): `redrive serve` keeps what
// other producers write as an error at its bounds, whatever the source: a
// Spring Kafka dead letter whose exception message is 2 MB, and an
// envelope written by hand into <topic>.dlq (not by redrive) whose
// message and stack trace are 2 MB and whose error class is 100 KB. Each
// is stored once with its first dlq.MaxErrorMessageLen characters and a
// marker counting the rest, the first dlq.MaxStackTraceLen of its stack
// trace and dlq.MaxTextLen of its class, and `dlq show` prints it.
func TestServeBoundsForeignTexts(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders.DLT", "payments", "payments.dlq", "orders-replay"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	pg := newSchema(t, "serve_bounds_"+strings.ToLower(broker.NewMessageID()[:8]))
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka:
  brokers: [%q]
  partitions: 1
  foreign_dlqs:
    - {topic: orders.DLT, format: spring, replay_to: orders-replay}
redis: {addr: %q}
postgres: {url: %q}
workers:
  - {name: billing, topic: payments}
admin: {listen: %q}
exporter: {listen: %q}
`, strings.Join(cluster.ListenAddrs(), ","), testenv.Redis.URL(), pg, adminAddr, metricsAddr))
	d := startDaemon(t, "serve", "--config", path, "--insecure-no-auth", "--sample-interval", "100ms")

	huge := strings.Repeat("é", 1<<20) // 2 MB
	spring := &kgo.Record{Topic: "orders.DLT", Key: []byte("k"), Value: []byte(`{"order":1}`), Headers: []kgo.RecordHeader{
		{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
		{Key: "kafka_dlt-original-partition", Value: be32bytes(0)},
		{Key: "kafka_dlt-original-offset", Value: be64bytes(7)},
		{Key: "kafka_dlt-exception-fqcn", Value: []byte("java.lang.IllegalStateException")},
		{Key: "kafka_dlt-exception-message", Value: []byte(huge)},
	}}
	envelope, _ := json.Marshal(map[string]any{
		"original_topic": "payments", "original_partition": 0, "original_offset": 3, "original_key": "k", "original_value": map[string]int{"n": 1}, "original_value_encoding": "json",
		"error_details": map[string]string{"exception_class": strings.Repeat("C", 100<<10), "message": huge, "stack_trace": huge},
		"reason":        "max_retries", "retry_count": 5, "worker_instance": "billing-1",
	})
	handWritten := &kgo.Record{Topic: "payments.dlq", Key: []byte("k"), Value: envelope}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerBatchMaxBytes(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), spring, handWritten).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	st, err := pgstore.Open(t.Context(), pg, pgstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cut := func(n int) string {
		return strings.Repeat("é", n) + "… (" + strconv.Itoa(1<<20-n) + " more characters cut)"
	}
	for _, name := range []string{"orders.DLT", "payments.dlq"} {
		var r dlq.Record
		eventually(t, name+" stored", func() bool {
			if _, done := d.exited(); done {
				t.Fatalf("serve exited:\n%s", d.stderr)
			}
			r, err = st.Get(t.Context(), name, "0-0")
			return err == nil
		}, func() string { return fmt.Sprintf("%v\n%s", err, d.stderr) })
		e := r.Entry
		if e.ErrorMessage != cut(dlq.MaxErrorMessageLen) {
			t.Errorf("%s: error message of %d bytes ending %q, want %d characters and the marker", name, len(e.ErrorMessage), e.ErrorMessage[max(0, len(e.ErrorMessage)-40):], dlq.MaxErrorMessageLen)
		}
		if name == "payments.dlq" && (e.StackTrace != strings.Repeat("é", dlq.MaxStackTraceLen) || e.ErrorClass != strings.Repeat("C", dlq.MaxTextLen)+"… ("+strconv.Itoa(100<<10-dlq.MaxTextLen)+" more characters cut)") {
			t.Errorf("%s: stack trace of %d bytes, class of %d bytes", name, len(e.StackTrace), len(e.ErrorClass))
		}
		code, out, errOut := cli(t, "dlq", "show", name, "0-0", "--config", path)
		if code != exitOK || !strings.Contains(out, "more characters cut)") || len(out) > 300<<10 {
			t.Errorf("dlq show %s: %d, %d bytes %s", name, code, len(out), errOut)
		}
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, d.stderr)
	}
}
