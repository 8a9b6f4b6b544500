package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestKafkaFidelity (issue 12): records produced by a foreign application
// (the raw kgo client) with headers in a given order, repeated and binary
// names, null and empty values, and null, empty and binary keys and values,
// are failed permanently (one after a retry through the retry topic); the
// retry copy and the dead-letter record read raw, the stored entry and the
// replayed record read raw keep the key, the value and the headers exactly
// (a W3C traceparent and tracestate among them)
// as a plain consumer of the topic reads them, redrive adding only
// x-redrive-* headers after them. Counted: every record is dead-lettered,
// stored and replayed once.
func TestKafkaFidelity(t *testing.T) {
	ctx := t.Context()
	brokers := kafkatest.Cluster(t)
	env := kafkaEnv(brokers)
	b := env.New(t).(*kafka.Broker)
	topic, group := topicName(t), "worker"
	sub := broker.Subscription{Topic: topic, Group: group, Concurrency: 2, ShutdownTimeout: 10 * time.Second, RetryMode: broker.NonBlocking,
		Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{100 * time.Millisecond}}}}
	declare(t, b, sub)

	hs := func(kv ...any) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			h := kgo.RecordHeader{Key: kv[i].(string)}
			if kv[i+1] != nil {
				h.Value = kv[i+1].([]byte)
			}
			out = append(out, h)
		}
		return out
	}
	cases := []struct {
		name  string
		rec   *kgo.Record
		retry bool
	}{
		{"ordered, repeated, binary and null headers", &kgo.Record{Key: []byte{0, 0xff, 'k'}, Value: []byte{0xfe, 0, '\n', 0xff},
			Headers: hs("case", []byte("1"), "b", []byte("2"), "a", []byte("1"), "dup", []byte("first"), "\x00\xffbin", []byte{0xff, 0},
				"dup", []byte("second"), "null", nil, "empty", []byte{}, "", []byte("empty name"))}, false},
		{"null key and value", &kgo.Record{Headers: hs("case", []byte("2"))}, false},
		{"empty key and value", &kgo.Record{Key: []byte{}, Value: []byte{}, Headers: hs("case", []byte("3"), "z", []byte("last"), "a", []byte("first"))}, false},
		{"after a retry", &kgo.Record{Key: []byte("k4"), Value: []byte("{\n \"pretty\": 1\n}"),
			Headers: hs("case", []byte("4"), "dup", []byte("x"), "dup", []byte("y"),
				"traceparent", []byte("00-"+traceID+"-"+traceParent+"-01"), "tracestate", []byte(traceState))}, true},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, c := range cases {
		if err := cl.ProduceSync(ctx, c.rec).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", c.name, err)
		}
	}
	caseOf := func(r *kgo.Record) string {
		for _, h := range r.Headers {
			if h.Key == "case" {
				return string(h.Value)
			}
		}
		return ""
	}
	// The reference: what a plain consumer of the topic reads.
	ref := map[string]*kgo.Record{}
	for _, r := range readTopic(t, brokers, topic, len(cases), nil) {
		ref[caseOf(r)] = r
	}
	if got := ref["2"]; got.Key != nil || got.Value != nil {
		t.Logf("note: the cluster reads a null key or value back as %q, %q", got.Key, got.Value)
	}

	stop := testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		if d.Headers["case"] == "4" && d.Attempt == 1 {
			return failing("try again")
		}
		return broker.Permanent(failing("cannot process case %s", d.Headers["case"]))
	})

	// The retry copy, read raw from the retry topic.
	retryTopic := kafka.RetryTopic(topic, group)
	for _, r := range readTopic(t, brokers, retryTopic, 1, nil) {
		checkKafkaCopy(t, "retry copy", ref[caseOf(r)], r, wire.Own)
	}
	// The dead letters, read raw.
	dls := readTopic(t, brokers, kafka.DLQTopic(topic), len(cases), nil)
	for _, r := range dls {
		c := caseOf(r)
		checkKafkaCopy(t, "DLQ record", ref[c], &kgo.Record{Key: r.Key, Value: ref[c].Value, Headers: r.Headers}, wire.Own)
		e, err := kafka.DecodeEnvelope(r.Value)
		if err != nil {
			t.Fatalf("case %s: envelope: %v", c, err)
		}
		checkKafkaEntry(t, "envelope", ref[c], e)
		if c == "4" && (e.RetryCount != 1 || e.Reason != string(driver.ReasonPermanent)) {
			t.Errorf("case 4: envelope retry count %d reason %s, want 1 and permanent", e.RetryCount, e.Reason)
		}
	}

	// The keeper stores them exactly.
	s := &suite{env: env}
	st := newCounting(s.store(t, testenv.PostgreSQL.URL(), ""))
	s.keeper(t, b, st, kafka.DLQTopic(topic), nil)
	st.waitAll(t, kafka.DLQTopic(topic), int64(len(cases)), 60*time.Second)
	page, err := st.List(ctx, dlq.Query{DLQ: kafka.DLQTopic(topic), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		full, err := st.Get(ctx, r.DLQ, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkKafkaEntry(t, "stored entry", ref[full.Entry.OriginalHeaders["case"]], full.Entry)
	}

	// Replayed with the worker stopped: read raw from its retry topic.
	stop()
	ops := s.ops(t, b, st, [2]string{topic, group})
	for _, r := range page.Records {
		if _, err := ops.Replay(ctx, r.DLQ, r.ID, "e2e"); err != nil {
			t.Fatalf("Replay %s: %v", r.ID, err)
		}
	}
	replayed := readTopic(t, brokers, retryTopic, len(cases), func(r *kgo.Record) bool {
		return slicesHasHeader(r, broker.HeaderReplayedFrom)
	})
	for _, r := range replayed {
		checkKafkaCopy(t, "replayed record", ref[caseOf(r)], r, func(k string) bool {
			return k == broker.HeaderReplayedFrom || k == driver.HeaderMessageID
		})
	}
	t.Logf("produced %d, dead-lettered %d, stored %d, replayed %d", len(cases), len(dls), len(page.Records), len(replayed))
	if len(dls) != len(cases) || len(replayed) != len(cases) {
		t.Errorf("dead-lettered %d and replayed %d of %d", len(dls), len(replayed), len(cases))
	}
}

func slicesHasHeader(r *kgo.Record, name string) bool {
	for _, h := range r.Headers {
		if h.Key == name {
			return true
		}
	}
	return false
}

// readTopic reads topic from its start until n records keep (nil: all)
// selects have arrived (failing after 60 s), then for a little longer so
// that extra ones show, and fails on extra ones.
func readTopic(t *testing.T, brokers []string, topic string, n int, keep func(*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(60 * time.Second)
	quietUntil := time.Time{}
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if keep == nil || keep(r) {
				out = append(out, r)
			}
		})
		switch {
		case len(out) >= n && quietUntil.IsZero():
			quietUntil = time.Now().Add(500 * time.Millisecond)
		case !quietUntil.IsZero() && time.Now().After(quietUntil):
			if len(out) != n {
				t.Errorf("%s: %d records, want %d", topic, len(out), n)
			}
			return out
		case time.Now().After(deadline):
			t.Fatalf("%s: %d of %d records", topic, len(out), n)
		}
	}
}

// checkKafkaCopy checks that got carries want's key, value and headers
// exactly (order, repeated names, null values), then only headers extra
// allows.
func checkKafkaCopy(t *testing.T, what string, want, got *kgo.Record, extra func(string) bool) {
	t.Helper()
	if want == nil {
		t.Errorf("%s: no reference record for %v", what, got.Headers)
		return
	}
	sameBytes := func(name string, w, g []byte) {
		if !bytes.Equal(w, g) || (w == nil) != (g == nil) {
			t.Errorf("%s: %s = %q (nil %v), want %q (nil %v)", what, name, g, g == nil, w, w == nil)
		}
	}
	sameBytes("key", want.Key, got.Key)
	sameBytes("value", want.Value, got.Value)
	if len(got.Headers) < len(want.Headers) {
		t.Errorf("%s: %d headers, want at least the %d of the original", what, len(got.Headers), len(want.Headers))
		return
	}
	for i, w := range want.Headers {
		g := got.Headers[i]
		if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
			t.Errorf("%s: header %d = %q: %q (nil %v), want %q: %q (nil %v)", what, i, g.Key, g.Value, g.Value == nil, w.Key, w.Value, w.Value == nil)
		}
	}
	for _, g := range got.Headers[len(want.Headers):] {
		if !extra(g.Key) {
			t.Errorf("%s: extra header %q: %q", what, g.Key, g.Value)
		}
	}
}

// checkKafkaEntry checks that an entry keeps want's key, value and headers
// exactly (its wire form) and their string view.
func checkKafkaEntry(t *testing.T, what string, want *kgo.Record, e dlq.Entry) {
	t.Helper()
	if want == nil {
		t.Errorf("%s: no reference record for %v", what, e.OriginalHeaders)
		return
	}
	f, err := wire.Decode(e.OriginalWire)
	if err != nil {
		t.Errorf("%s: wire form: %v", what, err)
		return
	}
	rec := &kgo.Record{Key: e.OriginalKey, Value: e.OriginalValue}
	for _, h := range f.Headers {
		rh := kgo.RecordHeader{Key: h.Name}
		switch v := h.Value.(type) {
		case []byte:
			rh.Value = v
		case nil:
		default:
			t.Errorf("%s: header %q of type %T, want bytes", what, h.Name, v)
		}
		rec.Headers = append(rec.Headers, rh)
	}
	checkKafkaCopy(t, what, want, rec, func(string) bool { return false })
	if len(rec.Headers) != len(want.Headers) {
		t.Errorf("%s: %d headers, want %d", what, len(rec.Headers), len(want.Headers))
	}
	view := map[string]string{}
	for _, h := range want.Headers {
		view[h.Key] = string(h.Value)
	}
	if fmt.Sprint(view) != fmt.Sprint(e.OriginalHeaders) {
		t.Errorf("%s: string view %q, want %q", what, e.OriginalHeaders, view)
	}
	if strings.Contains(fmt.Sprint(e.OriginalHeaders), broker.HeaderPrefix) {
		t.Errorf("%s: the string view keeps redrive's headers: %q", what, e.OriginalHeaders)
	}
}
