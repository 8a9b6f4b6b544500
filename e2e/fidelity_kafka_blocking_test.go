package e2e

import (
	"context"
	"sync/atomic"
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

// TestKafkaFidelityBlockingRetry: a record a foreign application produced
// (raw kgo: repeated, binary, null and empty headers) fails twice in
// blocking mode, retried in place, then for good, while the handler
// scribbles on the delivery it gets. Every call sees the record's headers
// (a repeated name: its last value) with the story of the last failure;
// the dead letter, read raw, carries the record's key and exact headers,
// and its envelope the record.
func TestKafkaFidelityBlockingRetry(t *testing.T) {
	ctx := t.Context()
	brokers := kafkatest.Cluster(t)
	b := kafkaEnv(brokers).New(t).(*kafka.Broker)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "inplace", ShutdownTimeout: 10 * time.Second,
		Policy: retrypolicy.Policy{MaxRetries: 5, Backoff: retrypolicy.Schedule{Delays: []time.Duration{0}}}}
	declare(t, b, sub)

	rec := &kgo.Record{Topic: topic, Key: []byte{0, 0xff, 'k'}, Value: []byte{0xfe, 0, '\n'}, Headers: []kgo.RecordHeader{
		{Key: "dup", Value: []byte("first")}, {Key: "\x00\xffbin", Value: []byte{0xff, 0}},
		{Key: "dup", Value: []byte("second")}, {Key: "null"}, {Key: "empty", Value: []byte{}},
	}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ref := readTopic(t, brokers, topic, 1, nil)[0]

	type seen struct {
		attempt       int
		dup, bin, err string
	}
	calls := make(chan seen, 8)
	var n atomic.Int32
	testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		calls <- seen{d.Attempt, d.Headers["dup"], d.Headers["\x00\xffbin"], d.LastError}
		d.Headers["dup"], d.Headers[broker.HeaderAttempt], d.Attempt = "scribbled", "7", 7
		switch n.Add(1) {
		case 1:
			return failing("first")
		case 2:
			return failing("second")
		}
		return broker.Permanent(failing("for good"))
	})

	want := []seen{{1, "second", "\xff\x00", ""}, {2, "second", "\xff\x00", "first"}, {3, "second", "\xff\x00", "second"}}
	for i, w := range want {
		select {
		case got := <-calls:
			if got != w {
				t.Errorf("call %d: %+v, want %+v", i+1, got, w)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d calls after 30 s, want %d", i, len(want))
		}
	}
	dl := readTopic(t, brokers, kafka.DLQTopic(topic), 1, nil)[0]
	checkKafkaCopy(t, "DLQ record", ref, &kgo.Record{Key: dl.Key, Value: ref.Value, Headers: dl.Headers}, wire.Own)
	e, err := kafka.DecodeEnvelope(dl.Value)
	if err != nil {
		t.Fatal(err)
	}
	checkKafkaEntry(t, "envelope", ref, e)
	if e.RetryCount != 2 || e.ErrorMessage != "for good" {
		t.Errorf("envelope: retry count %d, error %q; want 2, for good", e.RetryCount, e.ErrorMessage)
	}
	select {
	case got := <-calls:
		t.Errorf("a call after the dead letter: %+v", got)
	default:
	}
}
