package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/lag"
)

// The LagMonitor's tests measure a kfake cluster and grade the samples
// with a lag.Tracker, as the exporter does.

const topic = "orders"

type (
	kmsgReq  = kmsg.OffsetCommitRequest
	kmsgResp = kmsg.OffsetCommitResponse
)

// commitErr returns the first partition error of an offset commit.
func commitErr(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// kafkaEnv is kafkatest's lagging cluster.
type kafkaEnv struct{ *kafkatest.Lagging }

func newKafka(t testing.TB) kafkaEnv { return kafkaEnv{kafkatest.NewLagging(t, topic)} }

func (e kafkaEnv) produce(t testing.TB, p int32, n int, ts time.Time) { e.Produce(t, p, n, ts) }

func (e kafkaEnv) commit(t testing.TB, group string, offsets map[int32]int64) {
	e.Commit(t, group, offsets)
}

func (e kafkaEnv) measurer(t testing.TB, cfg kafka.LagConfig) *kafka.LagMonitor {
	t.Helper()
	k, err := kafka.NewLagMonitor(e.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func measure(t testing.TB, k *kafka.LagMonitor) driver.GroupSample {
	t.Helper()
	s, err := k.MeasureGroups(context.Background())
	if err != nil {
		t.Fatalf("MeasureGroups: %v", err)
	}
	return s
}

// lags returns the lag of each partition of group in s.
func lags(s driver.GroupSample, group string) map[int32]int64 {
	out := map[int32]int64{}
	for _, p := range s.Partitions {
		if p.Group == group {
			out[p.Partition] = p.Lag
		}
	}
	return out
}

func topicLag(t testing.TB, r lag.GroupReport, group string) lag.TopicLag {
	t.Helper()
	for _, tl := range r.Topics {
		if tl.Group == group && tl.Topic == topic {
			return tl
		}
	}
	t.Fatalf("no row for %s/%s in %+v", group, topic, r.Topics)
	return lag.TopicLag{}
}

func wantLags(t testing.TB, got, want map[int32]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("partition lags = %v, want %v", got, want)
	}
}

// Produce N, commit M: lag N−M per partition and summed per topic; it
// rises while the group is stopped and falls when it commits again.
func TestLagRecords(t *testing.T) {
	t.Parallel()
	e := newKafka(t)
	for p, n := range map[int32]int{0: 10, 1: 20, 2: 5} {
		e.produce(t, p, n, time.Time{})
	}
	e.commit(t, "g", map[int32]int64{0: 4, 1: 20, 2: 0})
	k := e.measurer(t, kafka.LagConfig{Groups: []string{"g"}})
	tr, _ := lag.NewTracker(lag.TrackerConfig{Thresholds: lag.Thresholds{topic: {Warning: 10, Critical: 20}}})

	s := measure(t, k)
	wantLags(t, lags(s, "g"), map[int32]int64{0: 6, 1: 0, 2: 5})
	for _, p := range s.Partitions {
		if p.End != map[int32]int64{0: 10, 1: 20, 2: 5}[p.Partition] || p.Committed != map[int32]int64{0: 4, 1: 20, 2: 0}[p.Partition] || p.Assigned() {
			t.Errorf("partition %d: committed %d end %d member %q", p.Partition, p.Committed, p.End, p.Member)
		}
	}
	tl := topicLag(t, tr.Observe(s), "g")
	if tl.Lag != 11 || tl.Level != lag.LevelWarning || tl.Partitions != 3 || tl.Members != 0 {
		t.Fatalf("topic row = %+v, want lag 11 WARNING over 3 partitions", tl)
	}

	// Stopped group, traffic goes on: lag rises.
	e.produce(t, 1, 15, time.Time{})
	s = measure(t, k)
	wantLags(t, lags(s, "g"), map[int32]int64{0: 6, 1: 15, 2: 5})
	tl = topicLag(t, tr.Observe(s), "g")
	if tl.Lag != 26 || tl.Level != lag.LevelCritical || tl.Status != lag.StatusStop {
		t.Fatalf("topic row = %+v, want lag 26 CRITICAL STOP (no member, offsets still)", tl)
	}

	// The group resumes and commits: lag falls.
	e.commit(t, "g", map[int32]int64{0: 10, 1: 30, 2: 5})
	s = measure(t, k)
	wantLags(t, lags(s, "g"), map[int32]int64{0: 0, 1: 5, 2: 0})
	tl = topicLag(t, tr.Observe(s), "g")
	if tl.Lag != 5 || tl.Level != lag.LevelOK || tl.Status != lag.StatusOK {
		t.Fatalf("topic row = %+v, want lag 5 OK OK", tl)
	}
}

// A group member that holds partitions: STALL while it does not commit,
// OK when it commits forward, REWIND when it commits backwards, STOP once
// it left. Every step is an explicit sample; nothing sleeps.
func TestLagStatusWithMember(t *testing.T) {
	t.Parallel()
	e := newKafka(t)
	for p := range int32(3) {
		e.produce(t, p, 10, time.Time{})
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(e.Addrs...), kgo.ConsumerGroup("workers"), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ClientID("worker-1"), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Poll until the member joined and was assigned every partition.
	for len(member.PollFetches(ctx).Records()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the member received nothing within 20s")
		}
	}
	commit := func(offsets map[int32]int64) {
		t.Helper()
		m := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for p, o := range offsets {
			m[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		done := make(chan error, 1)
		member.CommitOffsetsSync(ctx, m, func(_ *kgo.Client, _ *kmsgReq, resp *kmsgResp, err error) {
			if err == nil {
				err = commitErr(resp)
			}
			done <- err
		})
		if err := <-done; err != nil {
			t.Fatalf("member commit %v: %v", offsets, err)
		}
	}
	commit(map[int32]int64{0: 2, 1: 2, 2: 2})

	k := e.measurer(t, kafka.LagConfig{Groups: []string{"workers"}})
	tr, _ := lag.NewTracker(lag.TrackerConfig{Window: 3})
	step := func(want lag.Status) lag.TopicLag {
		t.Helper()
		s := measure(t, k)
		tl := topicLag(t, tr.Observe(s), "workers")
		if tl.Status != want {
			t.Fatalf("status = %s (%q), want %s; partitions %+v", tl.Status, tl.Reason, want, s.Partitions)
		}
		return tl
	}

	tl := step(lag.StatusOK) // one sample: nothing to compare yet
	if tl.Members != 1 || tl.Lag != 24 {
		t.Fatalf("topic row = %+v, want 1 member, lag 24", tl)
	}
	step(lag.StatusStall) // two samples, offsets still, member assigned
	commit(map[int32]int64{0: 6, 1: 6, 2: 6})
	step(lag.StatusOK) // moving and catching up
	commit(map[int32]int64{0: 1, 1: 6, 2: 6})
	tl = step(lag.StatusRewind)
	if tl.Reason != "partition 0: committed offset went back from 6 to 1" {
		t.Errorf("rewind reason = %q", tl.Reason)
	}
	// One more sample would read STALL (partitions 1 and 2 sit at 6 with a
	// member, which outranks REWIND); the member leaves instead.
	member.Close()
	// Partitions 1 and 2 lag with still offsets and no member: STOP, which
	// outranks partition 0's REWIND.
	tl = step(lag.StatusStop)
	if tl.Members != 0 {
		t.Errorf("members = %d after the member left", tl.Members)
	}
}

// Lag in seconds: the age of the record at the committed offset.
func TestLagTime(t *testing.T) {
	t.Parallel()
	e := newKafka(t)
	old := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	recent := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	e.produce(t, 0, 3, old)    // offsets 0..2
	e.produce(t, 0, 3, recent) // offsets 3..5
	e.produce(t, 1, 5, old)
	e.produce(t, 2, 2, recent)
	e.commit(t, "g", map[int32]int64{0: 3, 1: 1, 2: 2})

	s := measure(t, e.measurer(t, kafka.LagConfig{Groups: []string{"g"}}))
	want := map[int32]time.Duration{0: s.At.Sub(recent), 1: s.At.Sub(old), 2: 0}
	for _, p := range s.Partitions {
		if !p.TimeLagKnown {
			t.Fatalf("partition %d: no lag in seconds", p.Partition)
		}
		if d := p.TimeLag - want[p.Partition]; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("partition %d: time lag %s, want %s", p.Partition, p.TimeLag, want[p.Partition])
		}
	}
	tr, _ := lag.NewTracker(lag.TrackerConfig{})
	if tl := topicLag(t, tr.Observe(s), "g"); tl.TimeLag != want[1] {
		t.Errorf("topic time lag %s, want the oldest partition's %s", tl.TimeLag, want[1])
	}

	// Bounded work: with one fetch allowed, only the most lagging partition
	// (partition 1, lag 4) gets an age.
	s = measure(t, e.measurer(t, kafka.LagConfig{Groups: []string{"g"}, TimeLagPartitions: 1}))
	for _, p := range s.Partitions {
		known := p.Partition == 1 || p.Lag == 0
		if p.TimeLagKnown != known {
			t.Errorf("partition %d (lag %d): TimeLagKnown %v, want %v", p.Partition, p.Lag, p.TimeLagKnown, known)
		}
	}
	s = measure(t, e.measurer(t, kafka.LagConfig{Groups: []string{"g"}, TimeLagPartitions: -1}))
	for _, p := range s.Partitions {
		if p.TimeLagKnown {
			t.Errorf("partition %d has an age with time lag disabled", p.Partition)
		}
	}
}

func TestLagAllGroupsAndUnknownGroup(t *testing.T) {
	t.Parallel()
	e := newKafka(t)
	e.produce(t, 0, 3, time.Time{})
	e.commit(t, "a", map[int32]int64{0: 1})
	e.commit(t, "b", map[int32]int64{0: 2})
	s := measure(t, e.measurer(t, kafka.LagConfig{}))
	if got := lags(s, "a")[0] + 10*lags(s, "b")[0]; got != 2+10*1 {
		t.Errorf("lags of all groups: a %v b %v", lags(s, "a"), lags(s, "b"))
	}
	s = measure(t, e.measurer(t, kafka.LagConfig{Groups: []string{"never-seen"}}))
	if len(s.Partitions) != 0 {
		t.Errorf("a group that never committed has partitions %+v", s.Partitions)
	}
}

func TestLagUnreachable(t *testing.T) {
	t.Parallel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.ClosedAddr(t)), kgo.RequestRetries(0), kgo.RetryTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	k, _ := kafka.NewLagMonitor(cl, kafka.LagConfig{Groups: []string{"g"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := k.MeasureGroups(ctx); !errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("Measure against a closed port = %v, want ErrUnavailable", err)
	}
}

// TestMeasureKeepsGroups: measuring several groups, one of which never
// committed, leaves the configured list alone (kadm.Lag reuses the slice it
// is given; the groups measured once read [a a ...] afterwards).
func TestLagKeepsGroups(t *testing.T) {
	t.Parallel()
	e := newKafka(t)
	e.produce(t, 0, 2, time.Now())
	for _, g := range []string{"g1", "g2", "g3"} {
		e.commit(t, g, map[int32]int64{0: 1})
	}
	groups := []string{"g1", "g2", "g3", "never-committed"}
	k, err := kafka.NewLagMonitor(e.Client, kafka.LagConfig{Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		s, err := k.MeasureGroups(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// Every sample measures every group that committed, each once.
		for _, g := range []string{"g1", "g2", "g3"} {
			if got := lags(s, g); fmt.Sprint(got) != fmt.Sprint(map[int32]int64{0: 1, 1: 0, 2: 0}) {
				t.Fatalf("sample %d: lags of %s = %v, want partition 0 one behind", i, g, got)
			}
		}
		if len(s.Partitions) != 3*3 {
			t.Fatalf("sample %d: %d partitions measured, want the topic's 3 for each group that committed: %+v", i, len(s.Partitions), s.Partitions)
		}
	}
	if want := []string{"g1", "g2", "g3", "never-committed"}; fmt.Sprint(groups) != fmt.Sprint(want) {
		t.Fatalf("the caller's groups after MeasureGroups = %v, want %v", groups, want)
	}
}
