package kafka_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// shareCluster starts a kfake cluster whose share groups lock records for
// lock (swept every 50 ms) and archive a record after limit deliveries.
func shareCluster(t testing.TB, lock time.Duration, limit int) []string {
	t.Helper()
	_, brokers := kafkatest.Fake(t, kfake.BrokerConfigs(map[string]string{
		"group.share.record.lock.duration.ms": fmt.Sprint(lock.Milliseconds()),
		"share.record.lock.sweep.interval.ms": "50",
		"group.share.delivery.count.limit":    fmt.Sprint(limit),
	}))
	return brokers
}

// shareSub is a share-mode subscription of topic as group.
func shareSub(topic, group string, p retrypolicy.Policy) broker.Subscription {
	return broker.Subscription{Topic: topic, Group: group, RetryMode: broker.Share, Policy: p,
		Concurrency: 4, ShutdownTimeout: 5 * time.Second}
}

// produceMessages writes msgs to topic with a plain franz-go producer (ids in
// x-redrive-message-id, so that the recorder knows them).
func produceMessages(t testing.TB, brokers []string, topic string, msgs []broker.Message) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, m := range msgs {
		r := &kgo.Record{Key: m.Key, Value: m.Value, Headers: []kgo.RecordHeader{{Key: driver.HeaderMessageID, Value: []byte(m.ID)}}}
		for k, v := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestShareCounting: records from a plain producer, consumed in share
// mode by two Consume calls: 10 % fail once (a short back-off, held in
// place), 1 % always (dead-lettered after two retries), 1 % permanent.
// Counted: published = handled + dead-lettered, no duplicates, and no
// copy in the retry topic (every back-off was held); with members that
// fetch only while polling (the default), with standby members polling
// while the others hold back-offs, and with members that fetch ahead.
func TestShareCounting(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*kafka.Config)
	}{
		{"strict", nil},
		{"standby", func(c *kafka.Config) { c.ShareStandby = 3 }},
		{"fetch_ahead", func(c *kafka.Config) { c.ShareFetchAhead = true }},
	} {
		t.Run(tc.name, func(t *testing.T) { shareCounting(t, tc.edit) })
	}
}

func shareCounting(t *testing.T, edit func(*kafka.Config)) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, edit)
	topic := topicName(t)
	sub := shareSub(topic, "counting", retrypolicy.Policy{MaxRetries: 2, Backoff: schedule(50 * time.Millisecond)})
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	fate := map[string]string{}
	var msgs []broker.Message
	for i := range n {
		id := fmt.Sprintf("c-%04d", i)
		msgs = append(msgs, msg(id))
		switch {
		case i%100 == 7:
			fate[id] = "permanent"
		case i%100 == 8:
			fate[id] = "fatal"
		case i%10 == 3:
			fate[id] = "flaky"
		}
	}
	fates := maps.Clone(fate)
	rec := newRecorder()
	handler := func(d *broker.Delivery) error {
		switch fates[d.ID] {
		case "permanent":
			return broker.Permanent(failure("bad"))
		case "fatal":
			return failure("always")
		case "flaky":
			if d.Attempt == 1 {
				return failure("once")
			}
		}
		return nil
	}
	testenv.Consume(t, b, sub, rec.handler(1, handler))
	testenv.Consume(t, b, sub, rec.handler(2, handler))
	produceMessages(t, brokers, topic, msgs)

	wantDead := 0
	for _, f := range fate {
		if f == "permanent" || f == "fatal" {
			wantDead++
		}
	}
	calls := rec.WaitUntil(t, time.Minute, "every healthy message handled", func(c []call) bool {
		return len(successes(c)) == n-wantDead
	})
	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, sub.Group, wantDead, time.Second)
	dead := map[string]int{}
	for _, dl := range dls {
		dead[dl.Entry.MessageID]++
		if dl.Entry.GroupType != kafka.GroupTypeShare || dl.Entry.DeliveryCount < 1 {
			t.Errorf("dead letter %s: group_type %q delivery_count %d, want share and >= 1", dl.Entry.MessageID, dl.Entry.GroupType, dl.Entry.DeliveryCount)
		}
	}
	handled := successes(calls)
	lost, dups := 0, 0
	for _, m := range msgs {
		if handled[m.ID] == 0 && dead[m.ID] == 0 {
			lost++
		}
		dups += max(handled[m.ID]-1, 0) + max(dead[m.ID]-1, 0)
	}
	t.Logf("published %d, handled %d, dead-lettered %d, lost %d, duplicates %d", n, len(handled), len(dead), lost, dups)
	if lost != 0 || dups != 0 || len(dead) != wantDead {
		t.Fatalf("lost %d, duplicates %d, dead-lettered %d (want 0, 0, %d)", lost, dups, len(dead), wantDead)
	}
	for _, c := range calls {
		if c.d.Attempt == 2 && fate[c.d.ID] == "flaky" && c.d.LastError != "once" {
			t.Errorf("%s attempt 2: last error %q, want once", c.d.ID, c.d.LastError)
		}
	}
	if ends := kafkatest.EndOffsets(t.Context(), t, brokers, kafka.RetryTopic(topic, sub.Group)); sum(ends) != 0 {
		t.Errorf("retry topic holds %d records; every back-off was short and held in place", sum(ends))
	}
}

func sum(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

var _ atomic.Int64

// TestShareSlowHandlerWhileOthersFlow: one record's handler runs for
// three lock periods (the lock is 1 s) while the other records flow
// through the same Consume; its lock is renewed, so no other member gets
// it meanwhile: handled once. A second record's handler never returns:
// its Consume stops, gives up waiting, and the record, never
// acknowledged (its member did not poll again while holding it, which
// would have accepted it), goes to the next Consume. Counted: every
// record handled, the stuck one by the second Consume, with delivery
// count 2.
func TestShareSlowHandlerWhileOthersFlow(t *testing.T) {
	brokers := shareCluster(t, time.Second, 5)
	b := kafkatest.New(t, brokers, nil)
	topic := topicName(t)
	sub := shareSub(topic, "slow", retrypolicy.Policy{})
	sub.ShutdownTimeout = 300 * time.Millisecond
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const n = 300
	msgs := []broker.Message{msg("slow"), msg("stuck")}
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("f-%03d", i)))
	}
	unstick := make(chan struct{})
	defer close(unstick)
	rec := newRecorder()
	var slowStarts, stuckStarts atomic.Int32
	stopA := testenv.Consume(t, b, sub, rec.handler(1, func(d *broker.Delivery) error {
		switch d.ID {
		case "slow":
			slowStarts.Add(1)
			time.Sleep(3 * time.Second)
		case "stuck":
			stuckStarts.Add(1)
			<-unstick
			return failure("abandoned")
		default:
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	}))
	// One record at a time, so that the two long ones start early and
	// the others follow them.
	produceMessages(t, brokers, topic, msgs[:2])
	produceMessages(t, brokers, topic, msgs[2:])
	calls := rec.WaitUntil(t, time.Minute, "the slow record and the others handled", func(c []call) bool {
		return len(successes(c)) == n+1
	})
	var slowAt time.Time
	for _, c := range calls {
		if c.d.ID == "slow" {
			slowAt = c.at // recorded when its handler returned
		}
	}
	during := 0
	for _, c := range calls {
		if c.d.ID != "slow" && c.at.Before(slowAt.Add(-time.Second)) {
			during++
		}
	}
	if during < n/2 {
		t.Errorf("%d of %d records handled while the slow one ran; want the others to flow", during, n)
	}
	if s := slowStarts.Load(); s != 1 {
		t.Errorf("slow record's handler started %d times, want 1 (its lock renewed)", s)
	}
	stopA()

	testenv.Consume(t, b, sub, rec.handler(2, nil))
	calls = rec.WaitUntil(t, 30*time.Second, "the stuck record handed to the next Consume", func(c []call) bool {
		return successes(c)["stuck"] == 1
	})
	for _, c := range calls {
		if c.d.ID == "stuck" && c.member == 2 && (!c.d.Redelivered || c.d.Attempt != 1) {
			t.Errorf("stuck record on the second Consume: redelivered %v attempt %d, want true and 1", c.d.Redelivered, c.d.Attempt)
		}
	}
	handled := successes(calls)
	for _, m := range msgs {
		if handled[m.ID] != 1 {
			t.Errorf("%s handled %d times, want 1", m.ID, handled[m.ID])
		}
	}
	t.Logf("published %d, handled %d, %d while the slow one ran", len(msgs), len(handled), during)
}
