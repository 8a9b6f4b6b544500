package kafka_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestShareFromOutside: records another producer wrote (no headers, null
// and binary keys, empty, binary and JSON values, repeated, binary and
// null header values) are dead-lettered by a share-mode worker; a plain
// franz-go share-group consumer of <topic>.dlq, which knows nothing of
// redrive, reads envelopes that validate against the original records
// (topic, partition, offset, key, value, headers byte for byte, group
// type share, delivery count 1), and a plain consumer of <topic> finds it
// untouched: exactly the records written, no copy added.
func TestShareFromOutside(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := shareSub(topic, "outside", retrypolicy.Policy{MaxRetries: 1, Backoff: schedule(10 * time.Millisecond)})
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	originals := []*kgo.Record{
		{Topic: topic},
		{Topic: topic, Key: []byte{}, Value: []byte{}},
		{Topic: topic, Key: []byte{0xff, 0x00, 0xfe}, Value: []byte{0x00, 0x01, 0xc3}},
		{Topic: topic, Key: []byte("json"), Value: []byte(`{"deal":"550e8400","amount":1250}`)},
		{Topic: topic, Key: []byte("pretty"), Value: []byte("{\n  \"a\": 1\n}\n")},
		{Topic: topic, Key: []byte("headers"), Value: []byte("v"), Headers: []kgo.RecordHeader{
			{Key: "dup", Value: []byte("1")}, {Key: "dup", Value: []byte("2")}, {Key: "bin", Value: []byte{0xff}},
			{Key: "null"}, {Key: "empty", Value: []byte{}}, {Key: "x-redrive-attempt", Value: []byte("99")}}},
	}
	produceRaw(t, brokers, originals...)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(*broker.Delivery) error { return failure("nobody handles this") }))

	got := readShareGroup(t, brokers, kafka.DLQTopic(topic), "outside-reader", len(originals))
	byOffset := map[string]*kgo.Record{}
	for _, o := range originals {
		byOffset[fmt.Sprintf("%d-%d", o.Partition, o.Offset)] = o
	}
	for _, r := range got {
		var env map[string]json.RawMessage
		if err := json.Unmarshal(r.Value, &env); err != nil {
			t.Fatalf("dead letter %d/%d is not a JSON object: %v", r.Partition, r.Offset, err)
		}
		var part, off int64
		mustJSON(t, env["original_partition"], &part)
		mustJSON(t, env["original_offset"], &off)
		o := byOffset[fmt.Sprintf("%d-%d", part, off)]
		if o == nil {
			t.Fatalf("envelope names %d/%d, which no original record is", part, off)
		}
		var s struct {
			Topic, GroupType, Reason, Worker, ValueEncoding, KeyEncoding string
			DeliveryCount, RetryCount                                    int
			Wire                                                         string
		}
		mustJSON(t, env["original_topic"], &s.Topic)
		mustJSON(t, env["group_type"], &s.GroupType)
		mustJSON(t, env["delivery_count"], &s.DeliveryCount)
		mustJSON(t, env["retry_count"], &s.RetryCount)
		mustJSON(t, env["reason"], &s.Reason)
		mustJSON(t, env["worker"], &s.Worker)
		mustJSON(t, env["original_wire"], &s.Wire)
		if env["original_value_encoding"] != nil {
			mustJSON(t, env["original_value_encoding"], &s.ValueEncoding)
		}
		if env["original_key_encoding"] != nil {
			mustJSON(t, env["original_key_encoding"], &s.KeyEncoding)
		}
		wantRetries := 1
		if string(o.Key) == "headers" { // its x-redrive-attempt says 99: the story read as on every mode
			wantRetries = 98
		}
		if s.Topic != topic || s.GroupType != "share" || s.DeliveryCount != 1 || s.RetryCount != wantRetries || s.Reason != "max_retries" || s.Worker != sub.Group {
			t.Errorf("envelope of %d/%d: %+v", part, off, s)
		}
		if k := decoded(t, env["original_key"], s.KeyEncoding); !bytes.Equal(k, o.Key) || (k == nil) != (o.Key == nil) {
			t.Errorf("envelope of %d/%d: key %q, want %q", part, off, k, o.Key)
		}
		if v := decoded(t, env["original_value"], s.ValueEncoding); !bytes.Equal(v, o.Value) || (v == nil) != (o.Value == nil) {
			t.Errorf("envelope of %d/%d: value %q, want %q", part, off, v, o.Value)
		}
		raw, err := base64.StdEncoding.DecodeString(s.Wire)
		if err != nil {
			t.Fatal(err)
		}
		form, err := wire.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		var want wire.Table
		for _, h := range o.Headers {
			if !wire.Own(h.Key) {
				f := wire.Field{Name: h.Key}
				if h.Value != nil {
					f.Value = h.Value
				}
				want = append(want, f)
			}
		}
		if fmt.Sprint(form.Headers) != fmt.Sprint(want) {
			t.Errorf("envelope of %d/%d: headers %v, want %v", part, off, form.Headers, want)
		}
		if !bytes.Equal(r.Key, o.Key) {
			t.Errorf("dead letter %d/%d: record key %q, want the original %q", r.Partition, r.Offset, r.Key, o.Key)
		}
	}
	// The original topic, read from its start: exactly what was written.
	plain := readAll(t, brokers, topic, len(originals))
	if n := sum(kafkatest.EndOffsets(t.Context(), t, brokers, topic)); n != int64(len(originals)) || len(plain) != len(originals) {
		t.Errorf("%s holds %d records, want the %d written", topic, n, len(originals))
	}
	for _, r := range plain {
		o := byOffset[fmt.Sprintf("%d-%d", r.Partition, r.Offset)]
		if o == nil || !bytes.Equal(r.Key, o.Key) || !bytes.Equal(r.Value, o.Value) || len(r.Headers) != len(o.Headers) {
			t.Errorf("%s %d/%d changed", topic, r.Partition, r.Offset)
		}
	}
	if n := sum(kafkatest.EndOffsets(t.Context(), t, brokers, kafka.RetryTopic(topic, sub.Group))); n != 0 {
		t.Errorf("retry topic holds %d records; the 10ms back-off was held", n)
	}
}

// readShareGroup reads n records of topic as a share group of a plain
// franz-go client (starting at the earliest offset), accepting each.
func readShareGroup(t testing.TB, brokers []string, topic, group string, n int) []*kgo.Record {
	t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := kafka.SetShareOffsetReset(t.Context(), adm, group, "earliest"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		if ctx.Err() != nil {
			t.Fatalf("share group %s read %d records of %s, want %d", group, len(out), topic, n)
		}
		cl.PollRecords(ctx, 0).EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			r.Ack(kgo.AckAccept)
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t testing.TB, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("envelope member %s: %v", raw, err)
	}
}

// decoded reads an envelope's original_key or original_value as a reader
// outside redrive does, from its encoding.
func decoded(t testing.TB, raw json.RawMessage, enc string) []byte {
	t.Helper()
	if string(raw) == "null" {
		return nil
	}
	switch enc {
	case "json":
		return []byte(raw)
	case "base64":
		var s string
		mustJSON(t, raw, &s)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var s string
	mustJSON(t, raw, &s)
	return []byte(s)
}
