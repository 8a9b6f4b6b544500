package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestRetainedDeliveriesStayIntact: the Deliveries of the records a worker
// takes at once share one allocation (a slab). A handler that keeps its
// *Delivery, and changes it, must find every kept Delivery as it was
// delivered (or as it changed it) after many later fetches: no Delivery is
// reused, and a change to one does not reach its neighbours.
func TestRetainedDeliveriesStayIntact(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	// A few records per fetch, so that the records span many fetches and
	// many slabs.
	b := kafkatest.New(t, brokers, func(c *kafka.Config) {
		c.ClientOptions = append(c.ClientOptions, kgo.FetchMaxPartitionBytes(2000))
	})
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "keep", Concurrency: 3}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const n = 600
	var msgs []broker.Message
	for i := range n {
		id := fmt.Sprintf("m-%03d", i)
		msgs = append(msgs, broker.Message{ID: id, Key: []byte("k" + strconv.Itoa(i%7)),
			Value:   bytes.Repeat([]byte{byte(i)}, 100+i%50),
			Headers: map[string]string{"seq": strconv.Itoa(i), "empty": ""}})
	}
	for start := 0; start < n; start += 50 {
		if err := b.Publish(t.Context(), topic, msgs[start:start+50]...); err != nil {
			t.Fatal(err)
		}
	}
	kept := testenv.Recorder[*broker.Delivery]{}
	testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		d.Headers["seen"] = d.ID // a handler may change its delivery
		kept.Add(d)
		return nil
	})
	got := kept.WaitUntil(t, 60*time.Second, "every message", func(ds []*broker.Delivery) bool { return len(ds) >= n })
	byID := map[string]*broker.Delivery{}
	for _, d := range got {
		byID[d.ID] = d
	}
	if len(byID) != n {
		t.Fatalf("%d distinct messages of %d deliveries, want %d", len(byID), len(got), n)
	}
	for i, m := range msgs {
		d := byID[m.ID]
		switch {
		case d == nil:
			t.Fatalf("%s not delivered", m.ID)
		case !bytes.Equal(d.Value, m.Value) || !bytes.Equal(d.Key, m.Key):
			t.Fatalf("%s: key %q value %d bytes of %v, want %q and %d bytes of %d", m.ID, d.Key, len(d.Value), d.Value[:1], m.Key, len(m.Value), byte(i))
		case d.Headers["seq"] != strconv.Itoa(i) || d.Headers["seen"] != m.ID:
			t.Fatalf("%s: headers %v, want seq %d and seen %s", m.ID, d.Headers, i, m.ID)
		case d.Topic != topic || d.Group != "keep" || d.Source != topic || d.Attempt != 1:
			t.Fatalf("%s: topic %q group %q source %q attempt %d", m.ID, d.Topic, d.Group, d.Source, d.Attempt)
		}
		if v, ok := d.Headers["empty"]; !ok || v != "" {
			t.Fatalf("%s: empty header = %q, %v; want present and empty", m.ID, v, ok)
		}
	}
}

// TestRecordWithoutHeaders: a record a plain producer wrote without any
// header is delivered with an empty header map the handler can read and
// write, its timestamp and offset, and no id.
func TestRecordWithoutHeaders(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "plain"}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte("plain"), Timestamp: at}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		d.Headers["written"] = "by the handler" // must not panic
		return nil
	}))
	c := rec.WaitUntil(t, 30*time.Second, "the plain record", func(c []call) bool { return len(c) == 1 })[0]
	d := c.d
	if c.err != nil || string(d.Value) != "plain" || d.ID != "" || d.Key != nil || !d.Timestamp.Equal(at) || d.Offset != 0 || d.Attempt != 1 {
		t.Fatalf("delivery: err %v value %q id %q key %q timestamp %v (want %v) offset %d attempt %d",
			c.err, d.Value, d.ID, d.Key, d.Timestamp, at, d.Offset, d.Attempt)
	}
	if len(d.Headers) != 1 || d.Headers["written"] != "by the handler" {
		t.Fatalf("headers %v, want only the handler's", d.Headers)
	}
}
