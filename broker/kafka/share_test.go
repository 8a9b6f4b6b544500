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
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testenv"
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
		r := &kgo.Record{Key: m.Key, Value: m.Value, Headers: []kgo.RecordHeader{{Key: broker.HeaderMessageID, Value: []byte(m.ID)}}}
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
// copy in the retry topic (every back-off was held).
func TestShareCounting(t *testing.T) {
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
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
