// One file, over the usual length: the consumer's behaviour (blocking and
// non-blocking retries, dead letters, max age, shutdown) on one set of
// helpers.

package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

func schedule(ds ...time.Duration) retrypolicy.Schedule { return retrypolicy.Schedule{Delays: ds} }

// counter counts calls per message id across consumers.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
	return c.n[id]
}

func TestBlockingRetriesKeepPartitionOrder(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "ordered", Concurrency: 3,
		Policy: retrypolicy.Policy{MaxRetries: 5, Backoff: schedule(100 * time.Millisecond)}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const n = 30
	var msgs []broker.Message
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("o-%02d", i), "same-key"))
	}
	var calls counter
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		k := calls.inc(d.ID)
		switch {
		case d.ID == "o-03" && k <= 2:
			return failure("o-03 fails on call %d", k)
		case d.ID == "o-10" && k == 1:
			return broker.RetryAfter(failure("busy"), 200*time.Millisecond)
		case d.ID == "o-20" && k == 1:
			panic("o-20 panics once")
		}
		return nil
	}))
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	got := rec.WaitUntil(t, 30*time.Second, "every message handled", func(c []call) bool { return len(successes(c)) == n })

	// Calls come in publish order: a record is never handled before the
	// one ahead of it succeeded.
	var order []string
	for _, c := range got {
		if len(order) == 0 || order[len(order)-1] != c.d.ID {
			order = append(order, c.d.ID)
		}
		if c.d.Partition != got[0].d.Partition {
			t.Fatalf("one key landed on partitions %d and %d", got[0].d.Partition, c.d.Partition)
		}
	}
	var want []string
	for _, m := range msgs {
		want = append(want, m.ID)
	}
	if !slices.Equal(order, want) {
		t.Errorf("handling order = %v, want %v", order, want)
	}
	o3 := callsOf(got, "o-03")
	if len(o3) != 3 || o3[0].d.Attempt != 1 || o3[1].d.Attempt != 2 || o3[2].d.Attempt != 3 {
		t.Errorf("o-03 calls = %d with attempts %v, want 3 calls, attempts 1, 2, 3", len(o3), attempts(o3))
	}
	if gap := o3[1].at.Sub(o3[0].at); gap < 100*time.Millisecond {
		t.Errorf("o-03 retried after %s, before its 100ms back-off", gap)
	}
	if o3[2].d.LastError != "o-03 fails on call 2" || o3[2].d.FirstFailureAt.IsZero() {
		t.Errorf("attempt 3 story: last error %q, first failure %v", o3[2].d.LastError, o3[2].d.FirstFailureAt)
	}
	if o10 := callsOf(got, "o-10"); len(o10) != 2 || o10[1].at.Sub(o10[0].at) < 200*time.Millisecond {
		t.Errorf("o-10 (RetryAfter 200ms) calls = %d, want 2, 200ms apart", len(o10))
	}
	// The recorder misses the call that panicked; the retry tells.
	if o20 := callsOf(got, "o-20"); len(o20) != 1 || o20[0].d.Attempt != 2 || o20[0].d.Headers[broker.HeaderErrorClass] != broker.ClassPanic {
		t.Errorf("o-20 (panics once) recorded calls = %d, want its retry, attempt 2, with error class %q", len(o20), broker.ClassPanic)
	}
}

func attempts(cs []call) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.d.Attempt)
	}
	return out
}

func TestBlockingBackoffHoldsOnlyItsPartition(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	const backoff = 1500 * time.Millisecond
	// One handler at a time: a partition waiting on its back-off must not
	// hold the only slot.
	sub := broker.Subscription{Topic: topic, Group: "g", Concurrency: 1,
		Policy: retrypolicy.Policy{MaxRetries: 1, Backoff: schedule(backoff)}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	var calls counter
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		if d.ID == "block" && calls.inc(d.ID) == 1 {
			return failure("first try fails")
		}
		return nil
	}))
	if err := b.Publish(t.Context(), topic, msg("block")); err != nil {
		t.Fatal(err)
	}
	first := rec.WaitUntil(t, 30*time.Second, "the first failure", func(c []call) bool { return len(c) == 1 })[0]
	var msgs []broker.Message
	for i := range 30 {
		msgs = append(msgs, msg(fmt.Sprintf("k-%02d", i)))
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	got := rec.WaitUntil(t, 30*time.Second, "every message handled", func(c []call) bool { return len(successes(c)) == 31 })
	retry := callsOf(got, "block")[1]
	if gap := retry.at.Sub(first.at); gap < backoff {
		t.Errorf("block retried after %s, before its %s back-off", gap, backoff)
	}
	var others, same int
	for _, c := range got {
		if c.d.ID == "block" {
			continue
		}
		if c.d.Partition == first.d.Partition {
			same++
			if c.at.Before(retry.at) {
				t.Errorf("%s (same partition %d) handled %s before the blocked record's retry", c.d.ID, c.d.Partition, retry.at.Sub(c.at))
			}
			continue
		}
		others++
		if !c.at.Before(retry.at) {
			t.Errorf("%s (partition %d) handled %s after the back-off of partition %d ended: other partitions waited",
				c.d.ID, c.d.Partition, c.at.Sub(retry.at), first.d.Partition)
		}
	}
	t.Logf("during the %s back-off of partition %d: %d records of other partitions handled; %d records of the same partition waited",
		backoff, first.d.Partition, others, same)
	if others == 0 || same == 0 {
		t.Fatalf("keys spread badly: %d records on other partitions, %d on the blocked one; the test needs both", others, same)
	}
}

func TestRebalanceDuringBackoffLosesNothing(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g", Concurrency: 4, ShutdownTimeout: 5 * time.Second,
		Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: schedule(2*time.Second, 100*time.Millisecond)}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const n = 60
	var msgs []broker.Message
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("r-%02d", i)))
	}
	var calls counter
	decide := func(d *broker.Delivery) error {
		k := calls.inc(d.ID)
		if d.ID == "r-00" {
			return failure("poison")
		}
		// The second record of every partition fails once, so that every
		// partition has a record waiting on a back-off.
		if d.Offset == 1 && k == 1 {
			return failure("first call fails")
		}
		return nil
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, decide))
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}
	rec.WaitUntil(t, 30*time.Second, "a failure on every partition", func(c []call) bool {
		waiting := map[int32]bool{}
		for _, x := range c {
			if x.err != nil {
				waiting[x.d.Partition] = true
			}
		}
		return len(waiting) == 3
	})
	// A second member joins while partitions of the first wait on a
	// back-off.
	testenv.Consume(t, b, sub, rec.handler(2, decide))
	got := rec.WaitUntil(t, 60*time.Second, "every healthy message handled", func(c []call) bool { return len(successes(c)) == n-1 })
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "g", 1, 500*time.Millisecond)

	handled := successes(rec.Snapshot())
	dead := map[string]int{}
	for _, d := range dls {
		dead[d.Entry.MessageID]++
	}
	lost, dupHandled, dupDead := 0, 0, 0
	for _, m := range msgs {
		if handled[m.ID] == 0 && dead[m.ID] == 0 {
			lost++
		}
	}
	for _, c := range handled {
		dupHandled += c - 1
	}
	for _, c := range dead {
		dupDead += c - 1
	}
	t.Logf("published %d, handled %d, dead-lettered %d, lost %d, duplicates %d handled / %d dead",
		n, len(handled), len(dead), lost, dupHandled, dupDead)
	if lost != 0 || len(handled)+len(dead) != n {
		t.Fatalf("published %d != handled %d + dead-lettered %d (lost %d)", n, len(handled), len(dead), lost)
	}
	if dead["r-00"] == 0 {
		t.Errorf("the poison message is not in the DLQ: %v", dead)
	}
	// The rebalance happened during a back-off: a record that failed on
	// member 1 was handed over uncommitted and handled by member 2.
	handedOver := 0
	for _, m := range msgs {
		cs := callsOf(got, m.ID)
		if len(cs) >= 2 && cs[0].member == 1 && cs[0].err != nil && slices.ContainsFunc(cs[1:], func(c call) bool { return c.member == 2 }) {
			handedOver++
		}
	}
	if handedOver == 0 {
		t.Errorf("no record waiting on a back-off moved to member 2: the rebalance did not happen during a back-off")
	}
	t.Logf("%d records waiting on a back-off were handed over to the new member", handedOver)
}

func TestDeadLetterWriteFailure(t *testing.T) {
	c, brokers := kafkatest.Fake(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g", ShutdownTimeout: 2 * time.Second}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: kafka.DLQTopic(topic), Err: kerr.PolicyViolation, Count: -1})
	defer fault.Remove()

	rec := newRecorder()
	stop := testenv.Consume(t, b, sub, rec.handler(1, func(*broker.Delivery) error { return broker.Permanent(errors.New("bad payload")) }))
	if err := b.Publish(t.Context(), topic, msg("poison"), msg("behind", "poison")); err != nil {
		t.Fatal(err)
	}
	first := callsOf(rec.WaitUntil(t, 30*time.Second, "the poison's handler call", func(c []call) bool { return len(callsOf(c, "poison")) == 1 }), "poison")[0]
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Several refused writes, over several commit intervals.
	if err := fault.Wait(ctx, 6); err != nil {
		t.Fatalf("waiting for refused DLQ writes: %v", err)
	}
	if off := kafkatest.Committed(ctx, t, brokers, "g", topic, first.d.Partition); off > first.d.Offset {
		t.Fatalf("committed offset %d passed the record at %d whose DLQ copy was refused", off, first.d.Offset)
	}
	// The dead letter is sent without waiting (an in-flight window): the
	// record behind may be handled meanwhile, and its dead letter is
	// refused too; the partition then waits, writing the poison's again.
	if n := len(rec.Snapshot()); n > 2 {
		t.Errorf("handler calls while the DLQ write fails = %d, want at most 2 (poison, and behind in the window)", n)
	}
	// Stop while the write still fails: nothing is committed past the
	// record, and a new consumer handles it again.
	stop()
	if off := kafkatest.Committed(ctx, t, brokers, "g", topic, first.d.Partition); off > first.d.Offset {
		t.Fatalf("after shutdown, committed offset %d passed the record at %d", off, first.d.Offset)
	}
	fault.Remove()
	t.Logf("%d DLQ writes refused", fault.Hits())
	testenv.Consume(t, b, sub, rec.handler(2, func(*broker.Delivery) error { return broker.Permanent(errors.New("bad payload")) }))
	dls := kafkatest.DeadLetters(ctx, t, brokers, topic, "g", 2, 500*time.Millisecond)
	ids := map[string]int{}
	for _, d := range dls {
		ids[d.Entry.MessageID]++
	}
	if ids["poison"] != 1 || ids["behind"] != 1 || len(dls) != 2 {
		t.Errorf("dead letters by id = %v, want poison and behind once each", ids)
	}
	poison := callsOf(rec.Snapshot(), "poison")
	if len(poison) != 2 || poison[1].member != 2 {
		t.Errorf("poison handled %d times, want twice: once before the restart, once after", len(poison))
	}
	waitCommitted(t, brokers, "g", topic, first.d.Partition, first.d.Offset+2)
}

func TestDeadLetterWriteRetriedInPlace(t *testing.T) {
	c, brokers := kafkatest.Fake(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g"}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: kafka.DLQTopic(topic), Err: kerr.PolicyViolation, Count: 3})
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(*broker.Delivery) error { return broker.Permanent(errors.New("bad payload")) }))
	if err := b.Publish(t.Context(), topic, msg("poison")); err != nil {
		t.Fatal(err)
	}
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "g", 1, 500*time.Millisecond)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %d, want exactly 1", len(dls))
	}
	if fault.Hits() != 3 {
		t.Errorf("refused DLQ writes = %d, want 3", fault.Hits())
	}
	if n := len(rec.Snapshot()); n != 1 {
		t.Errorf("handler calls = %d, want 1 (the DLQ write is what is retried)", n)
	}
	first := rec.Snapshot()[0]
	waitCommitted(t, brokers, "g", topic, first.d.Partition, first.d.Offset+1)
}

// waitCommitted waits until group committed want on topic/partition.
func waitCommitted(t testing.TB, brokers []string, group, topic string, part int32, want int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := kafkatest.Committed(context.Background(), t, brokers, group, topic, part)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offset of %s/%d = %d, want %d", topic, part, got, want)
		}
		time.Sleep(50 * time.Millisecond) // polling the broker's state: there is no event to wait on
	}
}

func TestMaxAgeExpires(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g", MaxAge: time.Minute, Policy: retrypolicy.Policy{MaxRetries: 3}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	stale := msg("stale")
	stale.Timestamp = time.Now().Add(-time.Hour)
	if err := b.Publish(t.Context(), topic, stale, msg("fresh")); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, nil))
	rec.WaitUntil(t, 30*time.Second, "the fresh message", func(c []call) bool { return successes(c)["fresh"] == 1 })
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "g", 1, 300*time.Millisecond)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(dls))
	}
	e := dls[0].Entry
	if e.MessageID != "stale" || e.Reason != string(driver.ReasonExpired) || e.ErrorClass != driver.ClassExpired || e.RetryCount != 0 {
		t.Errorf("entry = id %q reason %q class %q retries %d, want stale, expired, expired, 0", e.MessageID, e.Reason, e.ErrorClass, e.RetryCount)
	}
	if !e.FirstFailureAt.IsZero() || !e.LastFailureAt.IsZero() {
		t.Errorf("expired entry has failure times %v / %v, want none (the handler never ran)", e.FirstFailureAt, e.LastFailureAt)
	}
	if v, _ := header(dls[0].Record, broker.HeaderReason); v != string(driver.ReasonExpired) {
		t.Errorf("DLQ record x-redrive-reason = %q, want expired", v)
	}
	if len(callsOf(rec.Snapshot(), "stale")) != 0 {
		t.Error("the handler was called for an expired message")
	}
}

func TestNonBlockingRetries(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	const backoff = 300 * time.Millisecond
	const maxRetries = 2
	sub := broker.Subscription{Topic: topic, Group: "nb", RetryMode: broker.NonBlocking,
		Policy: retrypolicy.Policy{MaxRetries: maxRetries, Backoff: schedule(backoff)}}
	other := broker.Subscription{Topic: topic, Group: "other"}
	if err := b.Declare(t.Context(), sub, other); err != nil {
		t.Fatal(err)
	}
	rec, otherRec := newRecorder(), newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		if d.ID == "bad" {
			return failure("bad fails on attempt %d", d.Attempt)
		}
		return nil
	}))
	testenv.Consume(t, b, other, otherRec.handler(1, nil))
	// Same key: same partition, bad ahead of good.
	if err := b.Publish(t.Context(), topic, msg("bad", "k"), msg("good", "k")); err != nil {
		t.Fatal(err)
	}
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "nb", 1, 3*backoff)
	calls := rec.Snapshot()
	bad, good := callsOf(calls, "bad"), callsOf(calls, "good")
	if len(bad) != maxRetries+1 {
		t.Fatalf("bad handled %d times, want max_retries+1 = %d", len(bad), maxRetries+1)
	}
	if len(good) != 1 {
		t.Fatalf("good handled %d times, want 1", len(good))
	}
	if !good[0].at.Before(bad[1].at) {
		t.Errorf("good handled %s after bad's first retry: the failing record blocked its partition", good[0].at.Sub(bad[1].at))
	}
	for i, c := range bad {
		if c.d.Attempt != i+1 {
			t.Errorf("bad call %d has attempt %d", i+1, c.d.Attempt)
		}
		if i > 0 {
			if gap := c.at.Sub(bad[i-1].at); gap < backoff {
				t.Errorf("bad retry %d came %s after the previous call, before its %s back-off", i, gap, backoff)
			}
			if c.d.Source != kafka.RetryTopic(topic, "nb") || c.d.Topic != topic {
				t.Errorf("retry %d read from %q (topic %q), want %q (topic %q)", i, c.d.Source, c.d.Topic, kafka.RetryTopic(topic, "nb"), topic)
			}
		}
	}
	if len(dls) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(dls))
	}
	e := dls[0].Entry
	if e.MessageID != "bad" || e.Reason != string(driver.ReasonMaxRetries) || e.RetryCount != maxRetries || e.Worker != "nb" ||
		e.OriginalTopic != topic || e.OriginalPartition != bad[0].d.Partition || e.OriginalOffset != bad[0].d.Offset ||
		e.Source != kafka.RetryTopic(topic, "nb") || e.ErrorMessage != "bad fails on attempt 3" {
		t.Errorf("dead letter = %+v; want bad, max_retries, %d retries, worker nb, from %s/%d@%d via the retry topic",
			e, maxRetries, topic, bad[0].d.Partition, bad[0].d.Offset)
	}
	if len(e.OriginalHeaders) != 1 || e.OriginalHeaders["trace"] != "t-bad" {
		t.Errorf("dead letter headers = %v, want only the application's", e.OriginalHeaders)
	}
	// The source offsets were committed once the retry copy was written.
	waitCommitted(t, brokers, "nb", topic, bad[0].d.Partition, good[0].d.Offset+1)
	// The other group saw each message once: retries stay in the failing
	// group.
	otherRec.WaitUntil(t, 10*time.Second, "the other group", func(c []call) bool { return len(c) >= 2 })
	if s := successes(otherRec.Snapshot()); s["bad"] != 1 || s["good"] != 1 || len(otherRec.Snapshot()) != 2 {
		t.Errorf("other group handled %v, want bad and good once each", s)
	}
	retries := readAll(t, brokers, kafka.RetryTopic(topic, "nb"), maxRetries)
	for i, r := range retries {
		due := wire.ParseTime(headerOr(r, driver.HeaderDueAt))
		if due.IsZero() || headerOr(r, broker.HeaderAttempt) != fmt.Sprint(i+2) {
			t.Errorf("retry copy %d: due %q attempt %q", i, headerOr(r, driver.HeaderDueAt), headerOr(r, broker.HeaderAttempt))
		}
	}
}

func headerOr(r *kgo.Record, name string) string {
	v, _ := header(r, name)
	return v
}

func TestHandlerPanicIsDeadLettered(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) { c.InstanceID = "pod-7" })
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g"}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		if d.ID == "boom" {
			panic("kaboom")
		}
		return nil
	}))
	if err := b.Publish(t.Context(), topic, msg("boom", "k"), msg("after", "k")); err != nil {
		t.Fatal(err)
	}
	rec.WaitUntil(t, 30*time.Second, "the message after the panic", func(c []call) bool { return successes(c)["after"] == 1 })
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "g", 1, 300*time.Millisecond)
	if len(dls) != 1 {
		t.Fatalf("dead letters = %d, want 1", len(dls))
	}
	e := dls[0].Entry
	if e.ErrorClass != broker.ClassPanic || e.ErrorMessage != "handler panic: kaboom" || e.StackTrace == "" || e.Reason != string(driver.ReasonMaxRetries) {
		t.Errorf("entry = class %q message %q reason %q stack %d chars; want panic, handler panic: kaboom, max_retries, a stack",
			e.ErrorClass, e.ErrorMessage, e.Reason, len(e.StackTrace))
	}
	if e.Worker != "g" || e.WorkerInstance != "pod-7" {
		t.Errorf("entry worker %q instance %q, want g and the configured instance pod-7", e.Worker, e.WorkerInstance)
	}
}

func TestShutdownDrainsInFlightHandler(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g", ShutdownTimeout: 5 * time.Second}
	started, release := make(chan *broker.Delivery, 1), make(chan struct{})
	var sawCancel bool
	stop := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
		started <- d
		<-release
		sawCancel = ctx.Err() != nil
		return nil
	})
	if err := b.Publish(t.Context(), topic, msg("slow")); err != nil {
		t.Fatal(err)
	}
	var d *broker.Delivery
	select {
	case d = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler was not called")
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Consume returned while its handler was running")
	case <-time.After(200 * time.Millisecond): // Consume must still be draining
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Consume did not return after the handler finished")
	}
	if sawCancel {
		t.Error("the handler's context was canceled before the shutdown timeout")
	}
	if got := kafkatest.Committed(context.Background(), t, brokers, "g", topic, d.Partition); got != d.Offset+1 {
		t.Errorf("committed offset after shutdown = %d, want %d (the drained record is done)", got, d.Offset+1)
	}
}

func TestShutdownTimeoutAbandonsHandler(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g", ShutdownTimeout: 300 * time.Millisecond}
	started, release := make(chan *broker.Delivery, 1), make(chan struct{})
	defer close(release)
	canceled := make(chan struct{})
	stop := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
		started <- d
		<-ctx.Done()
		close(canceled)
		<-release // ignores its context's end
		return nil
	})
	if err := b.Publish(t.Context(), topic, msg("stuck")); err != nil {
		t.Fatal(err)
	}
	var d *broker.Delivery
	select {
	case d = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler was not called")
	}
	start := time.Now()
	stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Consume took %s to return with a 300ms shutdown timeout", took)
	}
	select {
	case <-canceled:
	default:
		t.Error("the handler's context was not canceled at the shutdown timeout")
	}
	if got := kafkatest.Committed(context.Background(), t, brokers, "g", topic, d.Partition); got > d.Offset {
		t.Errorf("committed offset %d passed the abandoned record at %d", got, d.Offset)
	}
}

func TestConsumeRejectsBadInput(t *testing.T) {
	b := kafkatest.New(t, kafkatest.Cluster(t), nil)
	ok := func(context.Context, *broker.Delivery) error { return nil }
	if err := b.Consume(t.Context(), broker.Subscription{Topic: "t"}, ok); !errors.Is(err, broker.ErrInvalidSubscription) {
		t.Errorf("Consume without a group = %v, want ErrInvalidSubscription", err)
	}
	if err := b.Consume(t.Context(), broker.Subscription{Topic: "t", Group: "g"}, nil); !errors.Is(err, broker.ErrInvalidSubscription) {
		t.Errorf("Consume with a nil handler = %v, want ErrInvalidSubscription", err)
	}
}

func TestRetryTopicHandlesEarliestDueFirst(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "nb", RetryMode: broker.NonBlocking,
		Policy: retrypolicy.Policy{MaxRetries: 1}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		switch {
		case d.ID == "slow" && d.Attempt == 1:
			return broker.RetryAfter(failure("come back in 2s"), 2*time.Second)
		case d.ID == "quick" && d.Attempt == 1:
			return broker.RetryAfter(failure("come back in 200ms"), 200*time.Millisecond)
		}
		return nil
	}))
	// Same key: the retry copies share a retry partition, slow's ahead.
	if err := b.Publish(t.Context(), topic, msg("slow", "k"), msg("quick", "k")); err != nil {
		t.Fatal(err)
	}
	early := rec.WaitUntil(t, 30*time.Second, "quick's retry", func(c []call) bool { return successes(c)["quick"] == 1 })
	if successes(early)["slow"] == 0 {
		// While slow's copy waits, the retry partition's commit must not
		// pass it, though quick's copy behind it is done: watch a few
		// commit intervals.
		retryPart, slowCopy := callsOf(early, "quick")[1].d.Partition, callsOf(early, "quick")[1].d.Offset-1
		for range 5 {
			if off := kafkatest.Committed(t.Context(), t, brokers, "nb", kafka.RetryTopic(topic, "nb"), retryPart); off > slowCopy {
				t.Fatalf("retry partition committed at %d, past slow's waiting copy at %d", off, slowCopy)
			}
			time.Sleep(100 * time.Millisecond) // observing that nothing happens needs a window
		}
	}
	got := rec.WaitUntil(t, 30*time.Second, "both retries", func(c []call) bool { return len(successes(c)) == 2 })
	slow, quick := callsOf(got, "slow"), callsOf(got, "quick")
	if slow[1].d.Source != kafka.RetryTopic(topic, "nb") || quick[1].d.Source != slow[1].d.Source || quick[1].d.Partition != slow[1].d.Partition {
		t.Fatalf("retries read from %s/%d and %s/%d, want one partition of the retry topic",
			slow[1].d.Source, slow[1].d.Partition, quick[1].d.Source, quick[1].d.Partition)
	}
	if slow[1].d.Offset > quick[1].d.Offset {
		t.Fatalf("slow's retry copy at offset %d is not ahead of quick's at %d", slow[1].d.Offset, quick[1].d.Offset)
	}
	if !quick[1].at.Before(slow[1].at) {
		t.Errorf("quick's retry (200ms) came after slow's (2s): the retry partition was held by its head")
	}
	if late := quick[1].at.Sub(quick[0].at); late > time.Second {
		t.Errorf("quick's retry came %s after its failure, want about 200ms", late)
	}
	if gap := slow[1].at.Sub(slow[0].at); gap < 2*time.Second {
		t.Errorf("slow's retry came %s after its failure, before its 2s", gap)
	}
	waitCommitted(t, brokers, "nb", kafka.RetryTopic(topic, "nb"), slow[1].d.Partition, quick[1].d.Offset+1)
}

func TestLargeBinaryMessageIsDeadLettered(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil) // MaxMessageBytes: the 1,000,000 default
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "g"}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 900_000) // base64 in the envelope: 1.2 MB
	for i := range value {
		value[i] = byte(i*7 + i/251)
	}
	testenv.Consume(t, b, sub, newRecorder().handler(1, func(*broker.Delivery) error { return broker.Permanent(errors.New("too big to handle")) }))
	if err := b.Publish(t.Context(), topic, broker.Message{ID: "big", Value: value}); err != nil {
		t.Fatalf("Publish of %d bytes: %v", len(value), err)
	}
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, "g", 1, 0)
	if got := dls[0].Entry.OriginalValue; !bytes.Equal(got, value) {
		t.Errorf("dead letter value: %d bytes, not the %d published", len(got), len(value))
	}
	if n := len(dls[0].Record.Value); n <= 1_048_588 {
		t.Errorf("the envelope is %d bytes, within Kafka's default max.message.bytes: the test proves nothing", n)
	}
}

// A handler may change the delivery it gets. Each retry in place must
// still see the record as delivered with the story of the last failure,
// and the dead letter after them carries the record's own headers.
func TestBlockingRetryIgnoresHandlerChanges(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := broker.Subscription{Topic: topic, Group: "meddler",
		Policy: retrypolicy.Policy{MaxRetries: 2, Backoff: schedule(0)}}
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		attempt     int
		trace, last string
		first       time.Time
		headerN     string
	}
	calls := make(chan seen, 10)
	var n atomic.Int32
	testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		calls <- seen{d.Attempt, d.Headers["trace"], d.LastError, d.FirstFailureAt, d.Headers[broker.HeaderAttempt]}
		d.Headers["trace"], d.Headers[broker.HeaderAttempt], d.Headers["added"] = "changed", "99", "x"
		d.Attempt, d.FirstFailureAt, d.LastError = 42, time.Time{}, "changed"
		return failure("call %d", n.Add(1))
	})
	if err := b.Publish(t.Context(), topic, msg("m-1")); err != nil {
		t.Fatal(err)
	}
	var got []seen
	for range 3 {
		select {
		case s := <-calls:
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d calls after 30s, want 3", len(got))
		}
	}
	for i, s := range got {
		if s.attempt != i+1 || s.trace != "t-m-1" {
			t.Errorf("call %d: attempt %d, trace %q, want %d, t-m-1", i+1, s.attempt, s.trace, i+1)
		}
		if i > 0 && (s.last != fmt.Sprintf("call %d", i) || !s.first.Equal(got[1].first) || s.first.IsZero() || s.headerN != strconv.Itoa(i+1)) {
			t.Errorf("call %d: story %+v, want last error %q, the first failure of call 2, header attempt %d", i+1, s, fmt.Sprintf("call %d", i), i+1)
		}
	}
	dl := readAll(t, brokers, kafka.DLQTopic(topic), 1)[0]
	env, err := kafka.DecodeEnvelope(dl.Value)
	if err != nil {
		t.Fatal(err)
	}
	if env.RetryCount != 2 || env.OriginalHeaders["trace"] != "t-m-1" || env.ErrorMessage != "call 3" {
		t.Errorf("dead letter: retry count %d, trace %q, error %q; want 2, t-m-1, call 3", env.RetryCount, env.OriginalHeaders["trace"], env.ErrorMessage)
	}
	if _, ok := env.OriginalHeaders["added"]; ok {
		t.Error("the dead letter carries a header the handler added")
	}
}
