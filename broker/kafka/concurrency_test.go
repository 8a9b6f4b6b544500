package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestConcurrencyBoundsHandlersAcrossPartitions: three partitions, two
// slots: never more than two handlers at once, both slots used, every
// message handled once.
func TestConcurrencyBoundsHandlersAcrossPartitions(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	const slots, n = 2, 45
	sub := broker.Subscription{Topic: topic, Group: "g", Concurrency: slots}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	var inFlight, most atomic.Int64
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(*broker.Delivery) error {
		k := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
		}
		time.Sleep(10 * time.Millisecond) // the handler's work, long enough for the others to come
		return nil
	}))
	var msgs []broker.Message
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("m-%02d", i)))
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	got := rec.WaitUntil(t, 30*time.Second, "every message handled", func(c []call) bool { return len(c) >= n })
	parts := map[int32]bool{}
	seen := map[string]int{}
	for _, c := range got {
		parts[c.d.Partition] = true
		seen[c.d.ID]++
	}
	if len(parts) < 3 {
		t.Fatalf("messages on %d partitions; the test needs 3", len(parts))
	}
	if len(seen) != n || len(got) != n {
		t.Errorf("%d calls for %d distinct messages, want %d and %d", len(got), len(seen), n, n)
	}
	if m := most.Load(); m != slots {
		t.Errorf("at most %d handlers at once, want exactly Concurrency %d", m, slots)
	}
}

// TestRebalanceWhileWaitingForASlot: one slot, three partitions, and the
// slot held by a handler that does not return: the other partitions'
// workers wait in line. A second member joins; the partitions it takes
// are revoked from the first while their workers wait (or, when the
// partition it takes is the held one, after the shutdown timeout). The
// second member handles records while the slot is still held; then the
// handler returns and every message is handled, none lost, duplicates
// reported. That a halted worker leaves the line at once is
// TestHaltedWorkerLeavesTheLine's.
func TestRebalanceWhileWaitingForASlot(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	const n = 45
	sub := broker.Subscription{Topic: topic, Group: "g", Concurrency: 1, ShutdownTimeout: 2 * time.Second}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	var blocked atomic.Bool
	started, release := make(chan struct{}), make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	first := rec.handler(1, nil)
	testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
		if blocked.CompareAndSwap(false, true) {
			close(started)
			select { // the slot stays taken until the test releases it
			case <-release:
			case <-ctx.Done(): // its partition was revoked, past the shutdown timeout
				return ctx.Err()
			}
		}
		return first(ctx, d)
	})
	var msgs []broker.Message
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("w-%02d", i)))
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	next(t, started, 30*time.Second, "the first handler call")
	testenv.Consume(t, b, sub, rec.handler(2, nil))
	rec.WaitUntil(t, 30*time.Second, "the second member handling a record while the only slot of the first is held",
		func(c []call) bool {
			for _, x := range c {
				if x.member == 2 {
					return true
				}
			}
			return false
		})
	close(release)
	released = true
	rec.WaitUntil(t, 60*time.Second, "every message handled", func(c []call) bool { return len(successes(c)) == n })
	handled := successes(rec.Snapshot())
	lost, dups := 0, 0
	for _, m := range msgs {
		switch k := handled[m.ID]; {
		case k == 0:
			lost++
		case k > 1:
			dups += k - 1
		}
	}
	t.Logf("published %d, handled %d, lost %d, duplicates %d", n, len(handled), lost, dups)
	if lost != 0 {
		t.Fatalf("%d messages lost", lost)
	}
}

// next waits for c to be closed, at most d.
func next(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("no %s after %s", what, d)
	}
}
