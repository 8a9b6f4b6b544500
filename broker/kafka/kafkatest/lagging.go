package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Lagging is a one-broker kfake cluster with one topic of three
// partitions, for tests that measure lag: records are produced to a
// partition of choice, a group's offsets committed at will.
type Lagging struct {
	// Addrs are the cluster's seed brokers; Topic its topic.
	Addrs []string
	Topic string
	// Client produces with a manual partitioner; Admin commits.
	Client *kgo.Client
	Admin  *kadm.Client
}

// NewLagging starts the cluster of topic, closed when t ends.
func NewLagging(t testing.TB, topic string) *Lagging {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &Lagging{Addrs: c.ListenAddrs(), Topic: topic, Client: cl, Admin: kadm.NewClient(cl)}
}

// Produce writes n records to partition p, timestamped ts (zero: now).
func (e *Lagging) Produce(t testing.TB, p int32, n int, ts time.Time) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: e.Topic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: ts}
	}
	if err := e.Client.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// Commit sets group's committed offsets (a group without members).
func (e *Lagging) Commit(t testing.TB, group string, offsets map[int32]int64) {
	t.Helper()
	var os kadm.Offsets
	for p, o := range offsets {
		os.AddOffset(e.Topic, p, o, -1)
	}
	if err := e.Admin.CommitAllOffsets(context.Background(), group, os); err != nil {
		t.Fatalf("commit %v: %v", offsets, err)
	}
}
