package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/wire"
)

func TestPublishWritesRecords(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	ts := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	err := b.Publish(t.Context(), topic,
		broker.Message{ID: "m-1", Key: []byte("k"), Value: []byte("v1"), Headers: map[string]string{"tenant": "acme"}, Timestamp: ts},
		broker.Message{Value: []byte("v2")}, // no id, no key, no timestamp
	)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	recs := readAll(t, brokers, topic, 2)
	byValue := map[string]*kgo.Record{}
	for _, r := range recs {
		byValue[string(r.Value)] = r
	}
	r1, r2 := byValue["v1"], byValue["v2"]
	if r1 == nil || r2 == nil {
		t.Fatalf("records = %v, want v1 and v2", recs)
	}
	if string(r1.Key) != "k" || !r1.Timestamp.Equal(ts) {
		t.Errorf("v1: key %q timestamp %v, want k and %v", r1.Key, r1.Timestamp, ts)
	}
	if id, _ := header(r1, driver.HeaderMessageID); id != "m-1" {
		t.Errorf("v1 message id header = %q, want m-1", id)
	}
	if v, _ := header(r1, "tenant"); v != "acme" {
		t.Errorf("v1 tenant header = %q, want acme", v)
	}
	if id, ok := header(r2, driver.HeaderMessageID); !ok || len(id) != 32 {
		t.Errorf("v2 message id header = %q, want a generated 32-character id", id)
	}
	if r2.Key != nil {
		t.Errorf("v2 key = %q, want nil", r2.Key)
	}
	if age := time.Since(r2.Timestamp); age < 0 || age > time.Minute {
		t.Errorf("v2 timestamp %v is not about now", r2.Timestamp)
	}
	if _, ok := header(r1, driver.HeaderDueAt); ok {
		t.Error("an immediate message carries x-redrive-due-at")
	}
}

func TestPublishDelayedSetsDueAt(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	before := time.Now()
	if err := b.PublishDelayed(t.Context(), topic, 1500*time.Millisecond, msg("d-1")); err != nil {
		t.Fatalf("PublishDelayed: %v", err)
	}
	r := readAll(t, brokers, topic, 1)[0]
	v, ok := header(r, driver.HeaderDueAt)
	due := wire.ParseTime(v)
	if !ok || due.IsZero() {
		t.Fatalf("x-redrive-due-at = %q, want an RFC 3339 time", v)
	}
	if due.Before(before.Add(1500*time.Millisecond)) || due.After(time.Now().Add(1500*time.Millisecond+time.Millisecond)) {
		t.Errorf("due at %v, want publish time + 1.5 s (published between %v and now)", due, before)
	}
}

func TestPublishTooLarge(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) { c.MaxMessageBytes = 10_000 })
	topic := topicName(t)
	ok := broker.Message{ID: "small", Value: []byte("fits")}
	big := broker.Message{ID: "big", Value: make([]byte, 10_001)}
	err := b.Publish(t.Context(), topic, ok, big)
	if !errors.Is(err, broker.ErrTooLarge) {
		t.Fatalf("Publish(small, big) = %v, want an error wrapping ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), "big") || !strings.Contains(err.Error(), topic) {
		t.Errorf("error %q does not name the message and the topic", err)
	}
	// Nothing of the call was sent: the next publish lands at offset 0.
	if err := b.Publish(t.Context(), topic, ok); err != nil {
		t.Fatalf("Publish(small): %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 1 {
		t.Errorf("%s holds %d records, want 1 (the too-large call must send nothing)", topic, total)
	}
}

func TestNewUnreachableNamesBrokers(t *testing.T) {
	addr := "127.0.0.1:1" // nothing listens on port 1
	cfg := kafkatest.Config([]string{addr})
	cfg.ConnectTimeout = 2 * time.Second
	start := time.Now()
	_, err := kafka.New(context.Background(), cfg)
	if err == nil {
		t.Fatal("New on an unreachable cluster succeeded")
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the broker %s", err, addr)
	}
	if d := time.Since(start); d > cfg.ConnectTimeout+3*time.Second {
		t.Errorf("New took %s, want about the %s connect timeout", d, cfg.ConnectTimeout)
	}
}

func TestPublishToUnreachableClusterNamesBrokers(t *testing.T) {
	c, brokers := kafkatest.Fake(t)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) { c.DeliveryTimeout = 2 * time.Second })
	topic := topicName(t)
	if err := b.Publish(t.Context(), topic, msg("before")); err != nil {
		t.Fatalf("Publish while the cluster runs: %v", err)
	}
	c.Close()
	start := time.Now()
	err := b.Publish(t.Context(), topic, msg("after"))
	if err == nil {
		t.Fatal("Publish to a closed cluster succeeded")
	}
	for _, addr := range brokers {
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name broker %s", err, addr)
		}
	}
	// franz-go notices the context between connection attempts, so the
	// call ends a few seconds after the 2 s delivery timeout.
	t.Logf("Publish failed after %s: %v", time.Since(start), err)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Publish took %s to fail, want a few seconds past the 2 s delivery timeout", d)
	}
}

func TestClosedBroker(t *testing.T) {
	b := kafkatest.New(t, kafkatest.Cluster(t), nil)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g"}
	for name, err := range map[string]error{
		"Publish": b.Publish(t.Context(), topic, msg("x")),
		"Declare": b.Declare(t.Context(), sub),
		"Consume": b.Consume(t.Context(), sub, func(context.Context, *broker.Delivery) error { return nil }),
	} {
		if !errors.Is(err, broker.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}
