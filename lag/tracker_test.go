package lag

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestGrade(t *testing.T) {
	p := func(committed, lag int64) point { return point{committed: committed, lag: lag, assigned: true} }
	gone := func(committed, lag int64) point { return point{committed: committed, lag: lag} }
	tests := []struct {
		name   string
		window []point
		want   Status
		reason string
	}{
		{"caught up", []point{p(10, 0)}, StatusOK, ""},
		{"one sample, assigned, lagging", []point{p(10, 5)}, StatusOK, ""},
		{"one sample, consumer gone", []point{gone(10, 5)}, StatusStop, "no consumer assigned; committed offset 10 not moving, lag 5"},
		{"consumer gone, never committed", []point{gone(-1, 5), gone(-1, 7)}, StatusStop, "committed offset none"},
		{"stalled", []point{p(10, 5), p(10, 8), p(10, 8)}, StatusStall, "committed offset 10 not moving over 3 samples while lag is 8"},
		{"stalled, lag constant", []point{p(10, 5), p(10, 5)}, StatusStall, ""},
		{"stalled but caught up", []point{p(10, 0), p(10, 0)}, StatusOK, ""},
		{"rewind", []point{p(10, 5), p(4, 11), p(6, 9)}, StatusRewind, "committed offset went back from 10 to 4"},
		{"rewind beats caught up", []point{p(10, 0), p(4, 0)}, StatusRewind, ""},
		{"from no commit to a commit is no rewind", []point{p(-1, 5), p(3, 2)}, StatusOK, ""},
		{"falling behind", []point{p(10, 5), p(12, 5), p(14, 9)}, StatusWarn, "lag growing from 5 to 9 over 3 samples"},
		{"lag dipped", []point{p(10, 5), p(12, 4), p(14, 9)}, StatusOK, ""},
		{"keeping pace with backlog", []point{p(10, 5), p(20, 5)}, StatusOK, ""},
		{"catching up", []point{p(10, 9), p(20, 3)}, StatusOK, ""},
		{"moving, consumer gone between samples", []point{p(10, 9), gone(20, 3)}, StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := grade(tt.window)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("grade = %s (%q), want %s (%q)", got, reason, tt.want, tt.reason)
			}
			if got == StatusOK && reason != "" {
				t.Errorf("OK with a reason %q", reason)
			}
		})
	}
}

func sample(at time.Time, parts ...PartitionLag) GroupSample {
	return GroupSample{At: at, Partitions: parts}
}

func part(group, topic string, p int32, committed, end int64, member string) PartitionLag {
	return PartitionLag{Group: group, Topic: topic, Partition: p, Committed: committed, End: end, Lag: end - committed, Member: member}
}

// The tracker driven with explicit samples: a window slides, partitions
// fold into topics with the worst status, thresholds grade the sum.
func TestTrackerObserve(t *testing.T) {
	tr, err := NewTracker(TrackerConfig{Window: 3, Thresholds: Thresholds{"orders": {Warning: 10, Critical: 20}}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		parts  []PartitionLag
		status Status
		level  Level
		lag    int64
	}{
		// partition 0 moves, partition 1 sits still while a member holds it.
		{[]PartitionLag{part("g", "orders", 0, 0, 5, "m"), part("g", "orders", 1, 2, 4, "m")}, StatusOK, LevelOK, 7},
		{[]PartitionLag{part("g", "orders", 0, 3, 8, "m"), part("g", "orders", 1, 2, 9, "m")}, StatusStall, LevelWarning, 12},
		{[]PartitionLag{part("g", "orders", 0, 8, 8, "m"), part("g", "orders", 1, 2, 20, "m")}, StatusStall, LevelWarning, 18},
		// partition 1 resumes: its window holds different offsets now.
		{[]PartitionLag{part("g", "orders", 0, 8, 8, "m"), part("g", "orders", 1, 15, 20, "m")}, StatusOK, LevelOK, 5},
		// partition 0 is rewound (a reset to replay).
		{[]PartitionLag{part("g", "orders", 0, 1, 30, "m"), part("g", "orders", 1, 20, 20, "m")}, StatusRewind, LevelCritical, 29},
		{[]PartitionLag{part("g", "orders", 0, 30, 30, "m"), part("g", "orders", 1, 20, 20, "m")}, StatusRewind, LevelOK, 0},
		// the rewind (8 -> 1) left the 3-sample window.
		{[]PartitionLag{part("g", "orders", 0, 30, 30, "m"), part("g", "orders", 1, 20, 20, "m")}, StatusOK, LevelOK, 0},
		// the consumer leaves while messages arrive.
		{[]PartitionLag{part("g", "orders", 0, 30, 30, ""), part("g", "orders", 1, 20, 20, "")}, StatusOK, LevelOK, 0},
		{[]PartitionLag{part("g", "orders", 0, 30, 33, ""), part("g", "orders", 1, 20, 21, "")}, StatusStop, LevelOK, 4},
	}
	for i, st := range steps {
		rep := tr.Observe(sample(t0.Add(time.Duration(i)*time.Minute), st.parts...))
		if len(rep.Topics) != 1 {
			t.Fatalf("step %d: %d topics", i, len(rep.Topics))
		}
		tl := rep.Topics[0]
		if tl.Status != st.status || tl.Level != st.level || tl.Lag != st.lag || tl.Partitions != 2 {
			t.Errorf("step %d: %s %s lag %d (%q), want %s %s lag %d", i, tl.Status, tl.Level, tl.Lag, tl.Reason, st.status, st.level, st.lag)
		}
		if st.status != StatusOK && !strings.Contains(tl.Reason, "partition ") {
			t.Errorf("step %d: reason %q names no partition", i, tl.Reason)
		}
	}
}

func TestTrackerForgetsAndSkipsErrors(t *testing.T) {
	tr, _ := NewTracker(TrackerConfig{})
	now := time.Now()
	stalled := part("g", "t", 0, 5, 9, "m")
	tr.Observe(sample(now, stalled, part("g", "t", 1, 1, 2, "m")))
	rep := tr.Observe(sample(now, stalled))
	if rep.Topics[0].Status != StatusStall {
		t.Fatalf("status = %s, want STALL", rep.Topics[0].Status)
	}
	if len(tr.windows) != 1 {
		t.Errorf("tracker keeps %d windows, want 1 (partition 1 left the sample)", len(tr.windows))
	}
	bad := PartitionLag{Group: "g", Topic: "t", Partition: 0, Lag: -1, Err: errors.New("not leader")}
	rep = tr.Observe(sample(now, bad))
	if tl := rep.Topics[0]; tl.Errors != 1 || tl.Status != StatusOK || tl.Lag != 0 {
		t.Errorf("unknown partition: %+v", tl)
	}
	if rep.Partitions[0].Samples != 0 {
		t.Errorf("an unknown partition entered the window")
	}
}

func TestTrackerTopicAggregates(t *testing.T) {
	tr, _ := NewTracker(TrackerConfig{})
	a := part("g", "t", 0, 0, 10, "m1")
	a.TimeLag, a.TimeLagKnown = 3*time.Second, true
	b := part("g", "t", 1, 0, 2, "m2")
	b.TimeLag, b.TimeLagKnown = 9*time.Second, true
	c := part("g", "t", 2, 0, 1, "m2")
	other := part("h", "t", 0, 0, 0, "")
	rep := tr.Observe(sample(time.Now(), other, c, b, a))
	if len(rep.Topics) != 2 || rep.Topics[0].Group != "g" || rep.Partitions[0].Partition != 0 || rep.Partitions[0].Group != "g" {
		t.Fatalf("rows not sorted: %+v", rep.Topics)
	}
	g := rep.Topics[0]
	if g.Lag != 13 || g.TimeLag != 9*time.Second || !g.TimeLagKnown || g.Members != 2 || g.Partitions != 3 {
		t.Errorf("topic row = %+v, want lag 13, age 9s, 2 members, 3 partitions", g)
	}
	if h := rep.Topics[1]; h.TimeLagKnown || h.Lag != 0 {
		t.Errorf("h row = %+v", h)
	}
}

func TestThresholds(t *testing.T) {
	th := Thresholds{"a": {Warning: 100, Critical: 500}, "w": {Warning: 10}, "c": {Critical: 10}}
	tests := []struct {
		topic string
		lag   int64
		want  Level
	}{
		{"a", 100, LevelOK}, {"a", 101, LevelWarning}, {"a", 500, LevelWarning}, {"a", 501, LevelCritical},
		{"w", 1e9, LevelWarning}, {"c", 5, LevelOK}, {"c", 11, LevelCritical}, {"none", 1e9, LevelOK},
	}
	for _, tt := range tests {
		if got := th.Level(tt.topic, tt.lag); got != tt.want {
			t.Errorf("Level(%s, %d) = %s, want %s", tt.topic, tt.lag, got, tt.want)
		}
	}
	for _, bad := range []Thresholds{{"x": {Warning: -1}}, {"x": {Warning: 10, Critical: 5}}} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("Validate(%v) = %v, want ErrInvalidConfig naming the topic", bad, err)
		}
	}
	if err := th.Validate(); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
	if _, err := NewTracker(TrackerConfig{Window: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewTracker(window -1) = %v", err)
	}
}
