package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/lag"
)

// A share group (KIP-932) is measured from its share-partition offsets:
// a member that took records and holds some keeps them in the lag and
// the start offset at the first unfinished one; the lag in seconds is
// that record's age; the member shows as assigned. The consumer group of
// its retry topic is reported under the share group's name; no other
// group of the cluster is measured.
func TestLagShareGroup(t *testing.T) {
	t.Parallel()
	e := newKafka(t)
	old := time.Now().Add(-time.Minute)
	e.produce(t, 0, 10, old)
	const retryTopic = topic + ".retry.worker"
	if _, err := e.Admin.CreateTopic(t.Context(), 1, 1, nil, retryTopic); err != nil {
		t.Fatal(err)
	}
	var os kadm.Offsets
	os.AddOffset(retryTopic, 0, 0, -1)
	if err := e.Admin.CommitAllOffsets(t.Context(), "worker.retry", os); err != nil {
		t.Fatal(err)
	}
	e.commit(t, "someone-else", map[int32]int64{0: 0})
	setEarliest(t, e, "worker")

	sc, err := kgo.NewClient(kgo.SeedBrokers(e.Addrs...), kgo.ShareGroup("worker"), kgo.ConsumeTopics(topic),
		kgo.ClientID("member-1"), kgo.FetchMaxWait(100*time.Millisecond), kgo.ShareMaxRecords(10), kgo.ShareMaxRecordsStrict())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var held []*kgo.Record
	for len(held) < 10 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		sc.PollRecords(ctx, 0).EachRecord(func(r *kgo.Record) { held = append(held, r) })
		cancel()
		if ctx.Err() != nil && len(held) < 10 {
			t.Fatalf("took %d records, want 10", len(held))
		}
	}
	for _, r := range held {
		if r.Offset >= 3 { // the first three stay held: not finished
			r.Ack(kgo.AckAccept)
		}
	}
	if err := sc.FlushAcks(t.Context()); err != nil {
		t.Fatal(err)
	}

	k := e.measurer(t, kafka.LagConfig{Groups: []string{"worker"}, ShareGroups: []kafka.ShareGroup{{Group: "worker", RetryGroup: "worker.retry"}}})
	s := measure(t, k)
	var share, retry *driver.PartitionLag
	for i, p := range s.Partitions {
		switch {
		case p.Group == "someone-else":
			t.Errorf("measured group someone-else: %+v", p)
		case p.Group == "worker" && p.Share && p.Partition == 0:
			share = &s.Partitions[i]
		case p.Group == "worker" && !p.Share && p.Topic == retryTopic:
			retry = &s.Partitions[i]
		}
	}
	if len(s.GroupErrors) > 0 {
		t.Errorf("group errors %v", s.GroupErrors)
	}
	if share == nil || share.Committed != 0 || share.End != 10 || share.Lag != 3 || share.Member != "member-1" {
		t.Fatalf("share partition %+v, want start 0, end 10, lag 3 (the held ones), member-1", share)
	}
	if !share.TimeLagKnown || share.TimeLag < time.Minute {
		t.Errorf("share partition's lag in seconds %s (known %v), want the held record's age (>= 1m)", share.TimeLag, share.TimeLagKnown)
	}
	if retry == nil {
		t.Errorf("no partition of the retry group reported as worker: %+v", s.Partitions)
	}
	for _, p := range measure(t, e.measurer(t, kafka.LagConfig{ShareGroups: []kafka.ShareGroup{{Group: "worker"}}})).Partitions {
		if p.Group != "worker" || !p.Share {
			t.Errorf("share groups alone: measured %+v; no consumer group is asked for", p)
		}
	}
	r := mustTracker(t).Observe(s)
	if tl := topicLag(t, r, "worker"); tl.Lag != 3 || tl.Members != 1 {
		t.Errorf("topic row %+v, want lag 3 and one member", tl)
	}
}

func setEarliest(t testing.TB, e kafkaEnv, group string) {
	t.Helper()
	if err := kafka.SetShareOffsetReset(t.Context(), e.Client, group, "earliest"); err != nil {
		t.Fatal(err)
	}
}

func mustTracker(t testing.TB) *lag.Tracker {
	t.Helper()
	tr, err := lag.NewTracker(lag.TrackerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
