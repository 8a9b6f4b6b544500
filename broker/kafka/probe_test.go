package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestConsumerLagAndReady: while a handler stalls, the records behind it
// are the consumer's lag (from its fetch state); once it recovers and
// catches up the lag is 0. ConsumerReady answers for a running Consume
// only.
func TestConsumerLagAndReady(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g"}
	if err := b.ConsumerReady(t.Context(), topic, "g"); !errors.Is(err, kafka.ErrNotConsuming) {
		t.Fatalf("ConsumerReady before Consume = %v, want ErrNotConsuming", err)
	}
	release := make(chan struct{})
	handled := make(chan string, 100)
	stop := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
		if d.ID == "m-0" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		handled <- d.ID
		return nil
	})
	const n = 10
	msgs := make([]broker.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("m-%d", i), "one-partition")
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	waitLag(t, b, topic, func(l int64) bool { return l == n }, "lag = 10 while the first record's handler stalls")
	if err := b.ConsumerReady(t.Context(), topic, "g"); err != nil {
		t.Errorf("ConsumerReady while consuming = %v, want nil", err)
	}
	if l, _ := b.ConsumerLag(t.Context(), topic, "other-group"); l != 0 {
		t.Errorf("lag of a group not consumed here = %d, want 0", l)
	}
	close(release)
	for range n {
		select {
		case <-handled:
		case <-time.After(30 * time.Second):
			t.Fatal("records not handled after the handler recovered")
		}
	}
	waitLag(t, b, topic, func(l int64) bool { return l == 0 }, "lag = 0 once caught up")
	stop()
	if err := b.ConsumerReady(t.Context(), topic, "g"); !errors.Is(err, kafka.ErrNotConsuming) {
		t.Errorf("ConsumerReady after Consume returned = %v, want ErrNotConsuming", err)
	}
}

func waitLag(t *testing.T, b *kafka.Broker, topic string, ok func(int64) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var l int64
	for time.Now().Before(deadline) {
		var err error
		if l, err = b.ConsumerLag(t.Context(), topic, "g"); err != nil {
			t.Fatal(err)
		}
		if ok(l) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (lag %d)", what, l)
}
