package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestSharePausedLag: a share-mode worker paused (the operator's pause,
// the kill switch) takes no record; its consumer lag, which its heartbeat
// reports, is the share group's lag from the cluster: every record
// published meanwhile. Resumed, it handles each once and the lag falls
// to 0.
func TestSharePausedLag(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := shareSub(topic, "paused", retrypolicy.Policy{})
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	b.PauseConsume(topic, sub.Group)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, nil))
	testenv.Eventually(t, 10*time.Second, "the share consumer ready", func() bool {
		return b.ConsumerReady(t.Context(), topic, sub.Group) == nil
	})
	const n = 40
	var msgs []broker.Message
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("h-%02d", i)))
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	// Nothing to await: the point is that nothing happens for a while.
	time.Sleep(time.Second)
	if got := len(rec.Snapshot()); got != 0 {
		t.Fatalf("%d records handled while paused", got)
	}
	// The share group has no state before its first fetch: its lag shows
	// from the first record it took.
	b.ResumeConsume(topic, sub.Group)
	calls := rec.WaitUntil(t, 20*time.Second, "every record after the resume", func(c []call) bool { return len(c) >= n })
	for id, k := range successes(calls) {
		if k != 1 {
			t.Errorf("%s handled %d times", id, k)
		}
	}
	testenv.Eventually(t, 10*time.Second, "the share lag back to 0", func() bool {
		lag, err := b.ConsumerLag(t.Context(), topic, sub.Group)
		return err == nil && lag == 0
	})
	b.PauseConsume(topic, sub.Group)
	time.Sleep(500 * time.Millisecond) // a poll in flight when the pause came may still take
	before := len(rec.Snapshot())
	if err := b.Publish(t.Context(), topic, msgs[:10]...); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the share lag to count the 10 records published while paused", func() bool {
		lag, err := b.ConsumerLag(t.Context(), topic, sub.Group)
		return err == nil && lag == 10
	})
	if got := len(rec.Snapshot()); got != before {
		t.Errorf("%d records handled while paused", got-before)
	}
	b.ResumeConsume(topic, sub.Group)
	rec.WaitUntil(t, 20*time.Second, "the 10 records after the resume", func(c []call) bool { return len(c) >= before+10 })
}

// TestShareExpired: a record older than MaxAge when a share-mode worker
// takes it is dead-lettered, reason expired, without a call.
func TestShareExpired(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := shareSub(topic, "late", retrypolicy.Policy{MaxRetries: 3})
	sub.MaxAge = 300 * time.Millisecond
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), topic, msg("stale")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * sub.MaxAge) // the worker is down for longer than the max age
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, nil))
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, sub.Group, 1, time.Second)
	if len(dls) != 1 || dls[0].Entry.Reason != string(driver.ReasonExpired) || dls[0].Entry.GroupType != kafka.GroupTypeShare {
		t.Fatalf("dead letters %+v, want stale, expired, from the share group", kafkatest.Entries(dls))
	}
	if n := len(rec.Snapshot()); n != 0 {
		t.Errorf("handler called %d times for an expired record", n)
	}
}

// TestShareDeclare: Declare refuses a share-mode worker whose name is a
// consumer group's (the worker ran in another retry mode: Kafka keeps one
// name space for groups), naming what to do; and it leaves the operator's
// share.auto.offset.reset alone.
func TestShareDeclare(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	blocking := broker.Subscription{Topic: topic, Group: "switched"}
	if err := b.Declare(t.Context(), blocking); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	stop := testenv.Consume(t, b, blocking, rec.handler(1, nil))
	if err := b.Publish(t.Context(), topic, msg("one")); err != nil {
		t.Fatal(err)
	}
	rec.WaitUntil(t, 20*time.Second, "the record handled", func(c []call) bool { return len(c) == 1 })
	stop()
	share := blocking
	share.RetryMode = broker.Share
	b2 := kafkatest.New(t, brokers, nil)
	err := b2.Declare(t.Context(), share)
	if err == nil || !strings.Contains(err.Error(), "consumer group \"switched\" exists") || !strings.Contains(err.Error(), "kafka-consumer-groups --delete --group switched") {
		t.Fatalf("Declare of a share worker named as a consumer group = %v, want the conflict and what to do", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := b2.Consume(ctx, share, rec.handler(2, nil)); err == nil {
		t.Fatal("Consume of a share worker named as a consumer group = nil, want the conflict")
	}
}
