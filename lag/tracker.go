package lag

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultWindow is the TrackerConfig.Window default.
const DefaultWindow = 10

// TrackerConfig configures a Tracker.
type TrackerConfig struct {
	// Window is the number of samples a partition is graded on; default 10.
	Window int
	// Thresholds grade each topic's lag in records.
	Thresholds Thresholds
}

// Validate reports the first problem, naming the field.
func (c TrackerConfig) Validate() error {
	if c.Window < 0 {
		return fmt.Errorf("%w: window %d is negative", ErrInvalidConfig, c.Window)
	}
	return c.Thresholds.Validate()
}

// Tracker keeps a window of samples per (group, topic, partition) and grades
// them. It is safe for concurrent use.
type Tracker struct {
	cfg TrackerConfig

	mu      sync.Mutex
	windows map[partKey][]point
}

type partKey struct {
	group, topic string
	partition    int32
}

// NewTracker returns a tracker for cfg (validated, then defaults filled in).
func NewTracker(cfg TrackerConfig) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	return &Tracker{cfg: cfg, windows: map[partKey][]point{}}, nil
}

// GroupReport is a sample graded by a Tracker.
type GroupReport struct {
	// At is when the sample was taken.
	At time.Time
	// Topics has one row per (group, topic), sorted.
	Topics []TopicLag
	// Partitions has one row per (group, topic, partition), sorted.
	Partitions []PartitionStatus
	// GroupErrors are the sample's groups that could not be measured.
	GroupErrors map[string]error
}

// PartitionStatus is a partition's lag with its status.
type PartitionStatus struct {
	PartitionLag
	// Status over the window, with the reason when it is not OK.
	Status Status
	Reason string
	// Samples is the number of samples in the window.
	Samples int
}

// TopicLag is a group's lag on one topic.
type TopicLag struct {
	Group string
	Topic string
	// Partitions measured; Errors of them could not be.
	Partitions int
	Errors     int
	// Members is the number of distinct group members assigned partitions
	// of the topic.
	Members int
	// Lag is the sum of the partitions' lag in records.
	Lag int64
	// TimeLag is the largest lag in seconds among the partitions that have
	// one; TimeLagKnown is false when none has.
	TimeLag      time.Duration
	TimeLagKnown bool
	// Level grades Lag against the topic's thresholds.
	Level Level
	// Status is the worst of the partitions' statuses; Reason explains it.
	Status Status
	Reason string
}

// Observe adds s to the windows and grades it. Partitions absent from s
// are forgotten, so the windows hold only what is measured. Partitions
// whose lag is unknown are not added to their window and read OK.
func (t *Tracker) Observe(s GroupSample) GroupReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := make(map[partKey]bool, len(s.Partitions))
	r := GroupReport{At: s.At, GroupErrors: s.GroupErrors, Partitions: make([]PartitionStatus, 0, len(s.Partitions))}
	for _, p := range s.Partitions {
		k := partKey{p.Group, p.Topic, p.Partition}
		seen[k] = true
		ps := PartitionStatus{PartitionLag: p, Status: StatusOK}
		if p.Err == nil {
			w := append(t.windows[k], point{committed: p.Committed, lag: p.Lag, assigned: p.Assigned()})
			if len(w) > t.cfg.Window {
				w = slices.Delete(w, 0, len(w)-t.cfg.Window)
			}
			t.windows[k] = w
			ps.Status, ps.Reason = grade(w)
			ps.Samples = len(w)
		}
		r.Partitions = append(r.Partitions, ps)
	}
	for k := range t.windows {
		if !seen[k] {
			delete(t.windows, k)
		}
	}
	slices.SortFunc(r.Partitions, func(a, b PartitionStatus) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	r.Topics = t.topics(r.Partitions)
	return r
}

// topics folds partitions (sorted by group, topic) into topic rows.
func (t *Tracker) topics(parts []PartitionStatus) []TopicLag {
	var out []TopicLag
	for i := 0; i < len(parts); {
		j := i
		for j < len(parts) && parts[j].Group == parts[i].Group && parts[j].Topic == parts[i].Topic {
			j++
		}
		tl := TopicLag{Group: parts[i].Group, Topic: parts[i].Topic, Status: StatusOK}
		members := map[string]bool{}
		var reasons []string
		for _, p := range parts[i:j] {
			tl.Partitions++
			if p.Err != nil {
				tl.Errors++
				continue
			}
			tl.Lag += p.Lag
			if p.TimeLagKnown {
				tl.TimeLag = max(tl.TimeLag, p.TimeLag)
				tl.TimeLagKnown = true
			}
			if p.Assigned() {
				members[p.Member] = true
			}
			switch {
			case p.Status.Rank() > tl.Status.Rank():
				tl.Status, reasons = p.Status, []string{partReason(p)}
			case p.Status == tl.Status && p.Status != StatusOK:
				reasons = append(reasons, partReason(p))
			}
		}
		tl.Members = len(members)
		tl.Level = t.cfg.Thresholds.Level(tl.Topic, tl.Lag)
		if len(reasons) > 3 {
			reasons = append(reasons[:3], fmt.Sprintf("%d more", len(reasons)-3))
		}
		tl.Reason = strings.Join(reasons, "; ")
		out = append(out, tl)
		i = j
	}
	slices.SortFunc(out, func(a, b TopicLag) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic))
	})
	return out
}

func partReason(p PartitionStatus) string {
	return fmt.Sprintf("partition %d: %s", p.Partition, p.Reason)
}
