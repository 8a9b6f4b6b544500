package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestPauseConsume: while a subscription is paused its consumer takes no
// record (the member stays in its group); resumed, it handles every
// record once.
func TestPauseConsume(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "held", Concurrency: 3}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, nil))
	if err := b.Publish(t.Context(), topic, msg("first")); err != nil {
		t.Fatal(err)
	}
	rec.WaitUntil(t, 20*time.Second, "the first record", func(c []call) bool { return len(c) == 1 })
	b.PauseConsume(topic, sub.Group)
	// A fetch in flight when the pause came may still deliver; what is
	// published from now on waits.
	time.Sleep(200 * time.Millisecond)
	before := len(rec.Snapshot())
	const n = 30
	for i := range n {
		if err := b.Publish(t.Context(), topic, msg(fmt.Sprint("held-", i), fmt.Sprint("k", i))); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing to await: the point is that nothing happens for a while.
	time.Sleep(time.Second)
	if got := len(rec.Snapshot()); got != before {
		t.Fatalf("%d records handled while paused", got-before)
	}
	b.ResumeConsume(topic, sub.Group)
	calls := rec.WaitUntil(t, 20*time.Second, "every record after the resume", func(c []call) bool { return len(c) >= n+1 })
	if s := successes(calls); len(s) != n+1 {
		t.Fatalf("handled %d distinct records, want %d", len(s), n+1)
	}
	for id, k := range successes(calls) {
		if k != 1 {
			t.Errorf("%s handled %d times", id, k)
		}
	}
}
