package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The headers other applications' dead-letter publishers write, as their
// sources write them: Spring Kafka's DeadLetterRecordManager (used by
// DeadLetterPublishingRecoverer; texts UTF-8, the partition a 4-byte and
// the offset and timestamp 8-byte big-endian integers, appended after the
// record's own headers) and Kafka Connect's DeadLetterQueueReporter
// (every value UTF-8 text, numbers in decimal, appended after the
// record's own headers).

func be32bytes(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
func be64bytes(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// hostileMessage is an exception message an attacker could make an
// application write: markup for the console, a terminal escape for the CLI.
const hostileMessage = "order <script>alert(1)</script> rejected \x1b[2J"

// springDLT is record i of a Spring service's orders.DLT.
func springDLT(i int, app []kgo.RecordHeader) *kgo.Record {
	trace := "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method threw\n" +
		strings.Repeat("\tat com.example.Orders.handle(Orders.java:42)\n", 40)
	h := append(slices.Clone(app),
		kgo.RecordHeader{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
		kgo.RecordHeader{Key: "kafka_dlt-original-partition", Value: be32bytes(int32(i % 3))},
		kgo.RecordHeader{Key: "kafka_dlt-original-offset", Value: be64bytes(int64(1000 + i))},
		kgo.RecordHeader{Key: "kafka_dlt-original-timestamp", Value: be64bytes(1_700_000_000_000 + int64(i))},
		kgo.RecordHeader{Key: "kafka_dlt-original-timestamp-type", Value: []byte("CreateTime")},
		kgo.RecordHeader{Key: "kafka_dlt-original-consumer-group", Value: []byte("order-service")},
		kgo.RecordHeader{Key: "kafka_dlt-exception-fqcn", Value: []byte("org.springframework.kafka.listener.ListenerExecutionFailedException")},
		kgo.RecordHeader{Key: "kafka_dlt-exception-cause-fqcn", Value: []byte("java.lang.IllegalStateException")},
		kgo.RecordHeader{Key: "kafka_dlt-exception-message", Value: []byte(hostileMessage)},
		kgo.RecordHeader{Key: "kafka_dlt-exception-stacktrace", Value: []byte(trace)},
	)
	return &kgo.Record{Topic: "orders.DLT", Key: []byte(fmt.Sprintf("order-%d", i)), Value: []byte(fmt.Sprintf("{\n  \"order\": %d\n}", i)), Headers: h}
}

// connectDLQ is record i of a Kafka Connect sink's dlq-jdbc-sink.
func connectDLQ(i int, app []kgo.RecordHeader) *kgo.Record {
	h := append(slices.Clone(app),
		kgo.RecordHeader{Key: "__connect.errors.topic", Value: []byte("events")},
		kgo.RecordHeader{Key: "__connect.errors.partition", Value: []byte("2")},
		kgo.RecordHeader{Key: "__connect.errors.offset", Value: []byte(fmt.Sprint(500 + i))},
		kgo.RecordHeader{Key: "__connect.errors.connector.name", Value: []byte("jdbc-sink")},
		kgo.RecordHeader{Key: "__connect.errors.task.id", Value: []byte("0")},
		kgo.RecordHeader{Key: "__connect.errors.stage", Value: []byte("VALUE_CONVERTER")},
		kgo.RecordHeader{Key: "__connect.errors.class.name", Value: []byte("org.apache.kafka.connect.json.JsonConverter")},
		kgo.RecordHeader{Key: "__connect.errors.exception.class.name", Value: []byte("org.apache.kafka.connect.errors.DataException")},
		kgo.RecordHeader{Key: "__connect.errors.exception.message", Value: []byte("Converting byte[] to Kafka Connect data failed")},
		kgo.RecordHeader{Key: "__connect.errors.exception.stacktrace", Value: []byte("org.apache.kafka.connect.errors.DataException: Converting byte[]\n\tat JsonConverter.toConnectData")},
	)
	return &kgo.Record{Topic: "dlq-jdbc-sink", Key: nil, Value: append([]byte{0, 0xff, 0xfe}, byte(i)), Headers: h}
}

// TestServeKafkaForeign (issue 18, part 6): `redrive serve` keeps the
// dead-letter topics of a Spring Kafka service and of a Kafka Connect sink
// (kafka.foreign_dlqs) beside its own: every record produced is stored
// once (a record without the tool's headers raw), with the fields decoded
// from the tool's headers, the configured severity; the CLI and the
// console list them escaped; a replay goes to replay_to only, with the
// key, value and the record's own headers byte for byte.
func TestServeKafkaForeign(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(1, "orders.DLT", "dlq-jdbc-sink", "orders", "orders-replay", "events", "events-retry"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	pg := newSchema(t, "serve_foreign_"+strings.ToLower(broker.NewMessageID()[:8]))
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka:
  brokers: [%q]
  partitions: 1
  foreign_dlqs:
    - {topic: orders.DLT, format: spring, severity: critical, retention: forever, replay_to: orders-replay}
    - {topic: dlq-jdbc-sink, format: auto, severity: info, replay_to: events-retry}
redis: {addr: %q}
postgres: {url: %q}
workers:
  - {name: billing, topic: payments}
admin: {listen: %q}
exporter: {listen: %q}
`, strings.Join(cluster.ListenAddrs(), ","), testenv.Redis.URL(), pg, adminAddr, metricsAddr))
	d := startDaemon(t, "serve", "--config", path, "--insecure-no-auth", "--sample-interval", "100ms")

	// The record's own headers: binary, empty and null values, a repeated
	// name, in this order; what every replay must carry exactly.
	app := []kgo.RecordHeader{
		{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
		{Key: "bin", Value: []byte{0, 1, 0xff, 0x80}},
		{Key: "empty", Value: []byte{}},
		{Key: "null", Value: nil},
		{Key: "dup", Value: []byte("a")},
		{Key: "dup", Value: []byte("b")},
	}
	const nSpring, nConnect = 30, 20
	var recs []*kgo.Record
	for i := range nSpring {
		recs = append(recs, springDLT(i, app))
	}
	for i := range nConnect {
		recs = append(recs, connectDLQ(i, app))
	}
	// A record of orders.DLT without Spring's headers: kept raw.
	recs = append(recs, &kgo.Record{Topic: "orders.DLT", Key: []byte("raw"), Value: []byte("no headers")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// Nothing lost: every record produced is stored, once.
	st, err := pgstore.Open(t.Context(), pg, pgstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := func(name string) []dlq.Record {
		p, err := st.List(t.Context(), dlq.Query{DLQ: name, Limit: dlq.MaxLimit})
		if err != nil {
			t.Fatalf("list %s: %v", name, err)
		}
		return p.Records
	}
	eventually(t, "every record stored", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("serve exited:\n%s", d.stderr)
		}
		return len(stored("orders.DLT")) == nSpring+1 && len(stored("dlq-jdbc-sink")) == nConnect
	}, func() string {
		return fmt.Sprintf("stored %d + %d of %d + %d\n%s", len(stored("orders.DLT")), len(stored("dlq-jdbc-sink")), nSpring+1, nConnect, d.stderr)
	})

	for _, m := range []struct {
		dlq, severity string
		n             float64
	}{{"orders.DLT", "critical", nSpring + 1}, {"dlq-jdbc-sink", "info", nConnect}} {
		// Counted just after the store took them.
		var v float64
		var ok bool
		eventually(t, "worker_dlq_messages_total{"+m.dlq+","+m.severity+"} counts them", func() bool {
			v, ok = metricValue(t, "http://"+metricsAddr, "worker_dlq_messages_total", map[string]string{"dlq": m.dlq, "severity": m.severity})
			return ok && v == m.n
		}, func() string { return fmt.Sprintf("%v (present %v), want %v", v, ok, m.n) })
	}

	// The fields, as decoded from each tool's headers.
	sp, err := st.Get(t.Context(), "orders.DLT", "0-7")
	if err != nil {
		t.Fatal(err)
	}
	e := sp.Entry
	if sp.Severity != "critical" || e.OriginalTopic != "orders" || e.OriginalPartition != 1 || e.OriginalOffset != 1007 ||
		e.ErrorClass != "java.lang.IllegalStateException" || e.ErrorMessage != hostileMessage || e.Worker != "order-service" ||
		e.Reason != "spring_dlt" || !e.FirstFailureAt.Equal(time.UnixMilli(1_700_000_000_007)) {
		t.Errorf("Spring entry = severity %s, %+v", sp.Severity, e)
	}
	if n := len([]rune(e.StackTrace)); n != 500 || !strings.HasPrefix(e.StackTrace, "org.springframework.kafka.listener.ListenerExecutionFailedException") {
		t.Errorf("Spring stack trace: %d characters %q, want its first 500", n, e.StackTrace)
	}
	if string(e.OriginalKey) != "order-7" || string(e.OriginalValue) != "{\n  \"order\": 7\n}" {
		t.Errorf("Spring key, value = %q, %q", e.OriginalKey, e.OriginalValue)
	}
	for k := range e.OriginalHeaders {
		if strings.HasPrefix(k, "kafka_dlt-") {
			t.Errorf("Spring's own header %s kept among the record's headers", k)
		}
	}
	cn, err := st.Get(t.Context(), "dlq-jdbc-sink", "0-3")
	if err != nil {
		t.Fatal(err)
	}
	e = cn.Entry
	if cn.Severity != "info" || e.OriginalTopic != "events" || e.OriginalPartition != 2 || e.OriginalOffset != 503 ||
		e.ErrorClass != "org.apache.kafka.connect.errors.DataException" || e.ErrorMessage != "Converting byte[] to Kafka Connect data failed" ||
		e.Worker != "jdbc-sink" || e.WorkerInstance != "jdbc-sink-0" || e.Reason != "connect_error" ||
		!strings.HasPrefix(e.StackTrace, "org.apache.kafka.connect.errors.DataException") || e.OriginalKey != nil || !bytes.Equal(e.OriginalValue, []byte{0, 0xff, 0xfe, 3}) {
		t.Errorf("Connect entry = severity %s, %+v", cn.Severity, e)
	}
	raw, err := st.Get(t.Context(), "orders.DLT", fmt.Sprintf("0-%d", nSpring))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Entry.Reason != string(dlq.ReasonUnparseable) || string(raw.Entry.OriginalValue) != "no headers" || !strings.Contains(raw.Entry.ErrorMessage, "no Spring Kafka") {
		t.Errorf("raw entry = %+v", raw.Entry)
	}

	// The CLI lists them with the configured severity, the replay target
	// and the error escaped.
	_, out, errOut := cli(t, "dlq", "ls", "--config", path)
	if row := fields(out, "orders.DLT "); len(row) < 3 || row[1] != "critical" || row[2] != fmt.Sprint(nSpring+1) {
		t.Errorf("dlq ls = %q %s, want orders.DLT critical with %d pending", out, errOut, nSpring+1)
	}
	if row := fields(out, "dlq-jdbc-sink "); len(row) < 3 || row[1] != "info" || row[2] != fmt.Sprint(nConnect) {
		t.Errorf("dlq ls = %q, want dlq-jdbc-sink info with %d pending", out, nConnect)
	}
	_, out, errOut = cli(t, "dlq", "ls", "orders.DLT", "--config", path)
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, "topic orders-replay") {
		t.Errorf("dlq ls orders.DLT shows the error unescaped or no replay target:\n%q %s", out, errOut)
	}

	// The console, escaped.
	code, page := httpGet("http://" + adminAddr + "/dlq/orders.DLT/0-7")
	if code != http.StatusOK || strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") ||
		!strings.Contains(page, "java.lang.IllegalStateException") || !strings.Contains(page, "orders-replay") {
		t.Errorf("console entry page = %d, want the entry escaped with its replay target:\n%s", code, page)
	}
	if code, page = httpGet("http://" + adminAddr + "/dlq/dlq-jdbc-sink"); code != http.StatusOK || !strings.Contains(page, "DataException") {
		t.Errorf("console DLQ page = %d:\n%s", code, page)
	}

	// Replays go to replay_to, never to the topic the headers name.
	if code, out, errOut := cli(t, "dlq", "replay", "orders.DLT", "0-7", "--config", path); code != exitOK || !strings.Contains(out, "topic orders-replay") {
		t.Fatalf("dlq replay orders.DLT 0-7: %d %q %s", code, out, errOut)
	}
	if code, out, errOut := cli(t, "dlq", "replay", "dlq-jdbc-sink", "0-3", "--config", path); code != exitOK || !strings.Contains(out, "topic events-retry") {
		t.Fatalf("dlq replay dlq-jdbc-sink 0-3: %d %q %s", code, out, errOut)
	}
	got := readReplays(t, cluster.ListenAddrs(), 2, "orders-replay", "events-retry", "orders", "events")
	for _, want := range []struct {
		topic, from string
		key, value  []byte
	}{
		{"orders-replay", "orders.DLT/0-7", []byte("order-7"), []byte("{\n  \"order\": 7\n}")},
		{"events-retry", "dlq-jdbc-sink/0-3", nil, []byte{0, 0xff, 0xfe, 3}},
	} {
		r := got[want.from]
		if r == nil {
			t.Errorf("no replay of %s", want.from)
			continue
		}
		if r.Topic != want.topic || !bytes.Equal(r.Key, want.key) || (r.Key == nil) != (want.key == nil) || !bytes.Equal(r.Value, want.value) {
			t.Errorf("replay of %s = topic %s key %q value %q; want %s %q %q", want.from, r.Topic, r.Key, r.Value, want.topic, want.key, want.value)
		}
		if len(r.Headers) != len(app)+2 {
			t.Fatalf("replay of %s has headers %q, want the record's own %q and redrive's two", want.from, r.Headers, app)
		}
		for i, h := range app {
			g := r.Headers[i]
			if g.Key != h.Key || !bytes.Equal(g.Value, h.Value) || (g.Value == nil) != (h.Value == nil) {
				t.Errorf("replay of %s: header %d = %q=%q (null %v), want %q=%q (null %v)", want.from, i, g.Key, g.Value, g.Value == nil, h.Key, h.Value, h.Value == nil)
			}
		}
		if tail := r.Headers[len(app):]; tail[0].Key != broker.HeaderReplayedFrom || string(tail[0].Value) != want.from || tail[1].Key != driver.HeaderMessageID {
			t.Errorf("replay of %s ends with %q, want %s and %s", want.from, tail, broker.HeaderReplayedFrom, driver.HeaderMessageID)
		}
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, d.stderr)
	}
}

// readReplays reads topics from their start until n records carrying
// x-redrive-replayed-from arrived, and fails on any other record; it
// returns them by that header (a replay on a topic a record named shows
// in its topic).
func readReplays(t *testing.T, seeds []string, n int, topics ...string) map[string]*kgo.Record {
	t.Helper()
	rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out := map[string]*kgo.Record{}
	for len(out) < n {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d replays arrived on %v", len(out), n, topics)
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == broker.HeaderReplayedFrom {
					out[string(h.Value)] = r
					return
				}
			}
			t.Errorf("a record on %s that is not a replay: key %q", r.Topic, r.Key)
		})
	}
	return out
}
