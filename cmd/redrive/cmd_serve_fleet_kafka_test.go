package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// referenceEnvelopes are <topic>.dlq values as a non-Go worker writes the
// design's reference envelope: no original_value_encoding, often no
// reason nor original_headers, original_value of any JSON type, times as
// Jackson writes them. The last two are not envelopes at all.
var referenceEnvelopes = []string{
	// 0: a JSON object value, no reason, no headers.
	`{"original_topic":"payments","original_partition":3,"original_offset":12345,"original_key":"deal_550e8400",` +
		`"original_value":{"deal_id": "d1", "amount": 100},` +
		`"error_details":{"exception_class":"com.acme.BankRejected","message":"insufficient funds","stack_trace":"at com.acme.Payout.run(Payout.java:42)"},` +
		`"retry_count":5,"worker_instance":"payout-executor-1",` +
		`"first_failure_at":"2025-01-15T10:30:00.123456789Z","last_failure_at":"2025-01-15T11:45:00Z"}`,
	// 1: a value that is a JSON string: the text.
	`{"original_topic":"payments","original_partition":0,"original_offset":7,"original_key":"deal_2",` +
		`"original_value":"{\"deal_id\":\"d2\"} as text","reason":"max_retries","retry_count":5,"worker_instance":"payout-executor-2"}`,
	// 2: a null value.
	`{"original_topic":"payments","original_partition":1,"original_offset":8,"original_key":null,"original_value":null,` +
		`"error_details":{"exception_class":"java.lang.NullPointerException"},"worker_instance":"payout-executor-1"}`,
	// 3: no value at all, epoch-millisecond times, headers of several types.
	`{"original_topic":"payments","original_partition":2,"original_offset":9,"original_key":42,` +
		`"original_headers":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","attempt":3,"null":null},` +
		`"first_failure_at":1736937000123,"last_failure_at":"1736941500000"}`,
	// 4: not JSON.
	"\x00\xffnot an envelope",
	// 5: a JSON object, but not an envelope.
	`{"deal_id":"d5","amount":5}`,
}

// TestServeKafkaReferenceEnvelopes (issue 41, points 2 to 4): `redrive
// serve` keeps the reference envelopes a Spring Kafka worker writes to
// <topic>.dlq, raw-produced with franz-go, with every field they have; the
// worker is declared foreign, so a replay goes to <topic> itself, which a
// consumer group that is not redrive receives, and the CLI, the API and
// the audit row say every group of the topic gets it. An entry whose
// message is unknown (stored raw) is refused by the API (409
// unknown_message) and the CLI (exit 2, naming --as-stored) and stays
// pending; `--as-stored` sends its stored bytes, audited as such. Every
// record produced is one entry; every replay arrives once.
func TestServeKafkaReferenceEnvelopes(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "payments", "payments.dlq"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	seeds := cluster.ListenAddrs()
	pg := newSchema(t, "serve_fleet_"+strings.ToLower(broker.NewMessageID()[:8]))
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: kafka
kafka: {brokers: [%q], partitions: 1}
redis: {addr: %q}
postgres: {url: %q}
workers:
  - {name: pay-java, topic: payments, foreign: true, dlq: {severity: critical}}
admin: {listen: %q}
exporter: {listen: %q}
`, strings.Join(seeds, ","), testenv.Redis.URL(), pg, adminAddr, metricsAddr))
	d := startDaemon(t, "serve", "--config", path, "--insecure-no-auth", "--sample-interval", "100ms")

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(referenceEnvelopes))
	for i, v := range referenceEnvelopes {
		recs[i] = &kgo.Record{Topic: "payments.dlq", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	st, err := pgstore.Open(t.Context(), pg, pgstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var stored []dlq.Record
	eventually(t, "every record stored", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("serve exited:\n%s", d.stderr)
		}
		p, err := st.List(t.Context(), dlq.Query{DLQ: "payments.dlq", Limit: dlq.MaxLimit})
		stored = p.Records
		return err == nil && len(stored) == len(referenceEnvelopes)
	}, func() string {
		return fmt.Sprintf("%d of %d stored\n%s", len(stored), len(referenceEnvelopes), d.stderr)
	})
	get := func(i int) dlq.Entry {
		t.Helper()
		r, err := st.Get(t.Context(), "payments.dlq", fmt.Sprintf("0-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		return r.Entry
	}

	// Every field each envelope has, and nothing it has not.
	e := get(0)
	if e.OriginalTopic != "payments" || e.OriginalPartition != 3 || e.OriginalOffset != 12345 || string(e.OriginalKey) != "deal_550e8400" ||
		string(e.OriginalValue) != `{"deal_id": "d1", "amount": 100}` || e.ErrorClass != "com.acme.BankRejected" || e.ErrorMessage != "insufficient funds" ||
		e.StackTrace != "at com.acme.Payout.run(Payout.java:42)" || e.RetryCount != 5 || e.WorkerInstance != "payout-executor-1" || e.Reason != "" ||
		!e.FirstFailureAt.Equal(time.Date(2025, 1, 15, 10, 30, 0, 123456000, time.UTC)) || !e.LastFailureAt.Equal(time.Date(2025, 1, 15, 11, 45, 0, 0, time.UTC)) {
		t.Errorf("entry 0 = %+v", e)
	}
	if e = get(1); string(e.OriginalValue) != `{"deal_id":"d2"} as text` || e.Reason != "max_retries" || e.OriginalOffset != 7 {
		t.Errorf("entry 1 (a JSON string value) = value %q, %+v", e.OriginalValue, e)
	}
	if e = get(2); e.OriginalValue != nil || e.OriginalKey != nil || e.ErrorClass != "java.lang.NullPointerException" || e.Reason != "" {
		t.Errorf("entry 2 (a null value) = value %q (nil %v), key %q, %+v", e.OriginalValue, e.OriginalValue == nil, e.OriginalKey, e)
	}
	if e = get(3); e.OriginalValue != nil || string(e.OriginalKey) != "42" || !e.FirstFailureAt.Equal(time.UnixMilli(1736937000123)) ||
		!e.LastFailureAt.Equal(time.UnixMilli(1736941500000)) || e.OriginalHeaders["attempt"] != "3" || e.OriginalHeaders["null"] != "" ||
		!strings.HasPrefix(e.OriginalHeaders["traceparent"], "00-0af7") {
		t.Errorf("entry 3 = %+v", e)
	}
	for _, i := range []int{4, 5} {
		if e = get(i); e.Reason != string(dlq.ReasonUnparseable) || string(e.OriginalValue) != referenceEnvelopes[i] {
			t.Errorf("entry %d = reason %q value %q, want kept raw", i, e.Reason, e.OriginalValue)
		}
	}

	// The API says where a replay goes, and that every group gets it.
	const dest = "topic payments (every consumer group of it, worker pay-java among them)"
	var shown struct {
		ReplayDestination string `json:"replay_destination"`
		ReplayEveryGroup  bool   `json:"replay_every_group"`
		MessageUnknown    bool   `json:"message_unknown"`
	}
	code, body := httpGet("http://" + adminAddr + "/internal/v1/dlq/payments.dlq/0-0")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &shown) != nil || shown.ReplayDestination != dest || !shown.ReplayEveryGroup || shown.MessageUnknown {
		t.Errorf("GET entry 0-0 = %d %s", code, body)
	}

	// A consumer group that is not redrive's reads payments.
	java, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("java-billing"), kgo.ConsumeTopics("payments"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer java.Close()

	if code, out, errOut := cli(t, "dlq", "replay", "payments.dlq", "0-0", "--config", path); code != exitOK || !strings.Contains(out, "replayed payments.dlq/0-0 to "+dest) {
		t.Fatalf("dlq replay 0-0: %d %q %s", code, out, errOut)
	}

	// The unknown message: refused by the API and the CLI, left pending.
	resp, err := http.Post("http://"+adminAddr+"/internal/v1/dlq/replay", "application/json", strings.NewReader(`{"topic":"payments.dlq","id":"0-4"}`))
	if err != nil {
		t.Fatal(err)
	}
	var refusal struct{ Code, Error string }
	_ = json.NewDecoder(resp.Body).Decode(&refusal)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || refusal.Code != "unknown_message" {
		t.Errorf("POST replay 0-4 = %d %+v, want 409 unknown_message", resp.StatusCode, refusal)
	}
	code, out, errOut := cli(t, "dlq", "replay", "payments.dlq", "0-4", "--config", path)
	if code != exitUsage || !strings.Contains(errOut, "refused: dlq: replay payments.dlq/0-4: the original message is unknown") || !strings.Contains(errOut, "--as-stored") {
		t.Errorf("dlq replay 0-4 = %d %q %q, want exit 2 naming --as-stored", code, out, errOut)
	}
	if r, _ := st.Get(t.Context(), "payments.dlq", "0-4"); r.Status != dlq.StatusPending {
		t.Errorf("refused entry is %s, want pending", r.Status)
	}
	code, out, errOut = cli(t, "dlq", "replay", "payments.dlq", "0-4", "--as-stored", "--config", path)
	if code != exitOK || !strings.Contains(out, "replayed as stored payments.dlq/0-4 to "+dest) {
		t.Fatalf("dlq replay 0-4 --as-stored: %d %q %s", code, out, errOut)
	}

	// Both arrive once on payments; a record produced after them marks
	// the end (any replay sent twice would come before it).
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "payments", Key: []byte("end"), Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]*kgo.Record{}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for end := false; !end; {
		fs := java.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the end marker did not arrive; replays so far: %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == "end" {
				end = true
				return
			}
			from := ""
			for _, h := range r.Headers {
				if h.Key == broker.HeaderReplayedFrom {
					from = string(h.Value)
				}
			}
			got[from] = append(got[from], r)
		})
	}
	if len(got) != 2 || len(got["payments.dlq/0-0"]) != 1 || len(got["payments.dlq/0-4"]) != 1 {
		t.Fatalf("java-billing received %v, want one replay of 0-0 and one of 0-4", got)
	}
	if r := got["payments.dlq/0-0"][0]; string(r.Key) != "deal_550e8400" || string(r.Value) != `{"deal_id": "d1", "amount": 100}` {
		t.Errorf("replay of 0-0 = key %q value %q", r.Key, r.Value)
	}
	if r := got["payments.dlq/0-4"][0]; string(r.Key) != "k4" || !bytes.Equal(r.Value, []byte(referenceEnvelopes[4])) {
		t.Errorf("replay as stored of 0-4 = key %q value %q, want the stored record's", r.Key, r.Value)
	}

	// The audit rows say where each went, and how.
	for id, want := range map[string][2]string{"0-0": {dlq.ActionReplay, "to " + dest}, "0-4": {dlq.ActionReplayAsStored, "to " + dest + ": as stored"}} {
		trail, err := st.Audit(t.Context(), "payments.dlq", id)
		if err != nil || len(trail) != 1 || trail[0].Action != want[0] || !strings.HasPrefix(trail[0].Reason, want[1]) {
			t.Errorf("audit of %s = %+v, %v; want %s %q", id, trail, err, want[0], want[1])
		}
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, d.stderr)
	}
}
