package lag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrUnavailable is wrapped by Measure errors when the broker cannot be
// asked at all.
var ErrUnavailable = errors.New("lag: broker unavailable")

// Defaults of KafkaConfig.
const (
	DefaultTimeLagPartitions = 64
	DefaultFetchMaxBytes     = 64 << 10
	DefaultTimeLagTimeout    = 5 * time.Second
	timeLagConcurrency       = 8
)

// KafkaConfig configures Kafka lag measurement.
type KafkaConfig struct {
	// Groups to measure; empty = every group of the cluster (unless
	// ShareGroups are given: then only those).
	Groups []string
	// ShareGroups are share groups to measure (workers of retry mode
	// share), each with the consumer group of its retry topic; a name in
	// both lists is measured as a share group.
	ShareGroups []ShareGroup
	// TimeLagPartitions bounds the partitions whose oldest unconsumed
	// record is fetched per sample for the lag in seconds, the most
	// lagging first; default 64; negative = no lag in seconds.
	TimeLagPartitions int
	// FetchMaxBytes bounds each of those fetches; default 64 KiB (a record
	// batch larger than this is still returned whole, as Kafka does for the
	// first batch of a fetch).
	FetchMaxBytes int32
	// TimeLagTimeout bounds the lag-in-seconds fetches of one sample;
	// default 5 s. Partitions not fetched in time have no lag in seconds.
	TimeLagTimeout time.Duration
}

// WithDefaults returns c with the documented defaults filled in.
func (c KafkaConfig) WithDefaults() KafkaConfig {
	if c.TimeLagPartitions == 0 {
		c.TimeLagPartitions = DefaultTimeLagPartitions
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.TimeLagTimeout <= 0 {
		c.TimeLagTimeout = DefaultTimeLagTimeout
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c KafkaConfig) Validate() error {
	for i, g := range c.Groups {
		if g == "" {
			return fmt.Errorf("%w: groups[%d] is empty", ErrInvalidConfig, i)
		}
	}
	for i, g := range c.ShareGroups {
		if g.Group == "" {
			return fmt.Errorf("%w: share_groups[%d] is empty", ErrInvalidConfig, i)
		}
	}
	if c.FetchMaxBytes < 0 {
		return fmt.Errorf("%w: fetch max bytes %d is negative", ErrInvalidConfig, c.FetchMaxBytes)
	}
	if c.TimeLagTimeout < 0 {
		return fmt.Errorf("%w: time lag timeout %s is negative", ErrInvalidConfig, c.TimeLagTimeout)
	}
	return nil
}

// Kafka measures consumer-group lag. It is safe for concurrent use.
type Kafka struct {
	cl  *kgo.Client
	adm *kadm.Client
	cfg KafkaConfig
}

// NewKafka returns a measurer using cl, a client of the cluster (it needs
// no consumer options; the caller keeps ownership and closes it).
func NewKafka(cl *kgo.Client, cfg KafkaConfig) (*Kafka, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Kafka{cl: cl, adm: kadm.NewClient(cl), cfg: cfg.WithDefaults()}, nil
}

// KafkaSample is one measurement of every measured group.
type KafkaSample struct {
	// At is when the sample was taken.
	At time.Time
	// Partitions holds one entry per (group, topic, partition), sorted.
	Partitions []PartitionLag
	// GroupErrors holds the groups that could not be described or whose
	// offsets could not be fetched.
	GroupErrors map[string]error
}

// PartitionLag is one partition's lag for one group.
type PartitionLag struct {
	Group     string
	Topic     string
	Partition int32
	// Committed is the group's committed offset (the next record it will
	// consume); -1 when it never committed.
	Committed int64
	// End is the partition's end offset (high watermark).
	End int64
	// Lag is End − Committed in records (End − log start without a
	// commit), 0 at least; -1 when unknown (see Err).
	Lag int64
	// TimeLag is the age of the oldest unconsumed record at the sample's
	// time; meaningful when TimeLagKnown. 0 when Lag is 0.
	TimeLag      time.Duration
	TimeLagKnown bool
	// Member is the client id of the group member assigned the partition
	// (of a share group: the first of those assigned); empty when none is
	// (the group is empty or rebalancing).
	Member string
	// Share is set for a share group's partition (KIP-932): Committed is
	// then the share-partition start offset, the first record not yet
	// finished, and Lag the records from there to End not yet
	// acknowledged, those a member holds included.
	Share bool
	// Err is why the lag is unknown.
	Err error
}

// Assigned reports whether a group member is assigned the partition.
func (p PartitionLag) Assigned() bool { return p.Member != "" }

// Measure takes one sample of the configured groups. It fails (wrapping
// ErrUnavailable) only when the cluster cannot be asked at all; a group or
// a partition that cannot be measured is reported in the sample.
func (k *Kafka) Measure(ctx context.Context) (KafkaSample, error) {
	s := KafkaSample{At: time.Now(), GroupErrors: map[string]error{}}
	groups, as := k.consumerGroups()
	var lags kadm.DescribedGroupLags
	if len(groups) > 0 || len(k.cfg.ShareGroups) == 0 {
		var err error
		// A copy: kadm.Lag reuses the slice it is given as scratch space.
		if lags, err = k.adm.Lag(ctx, slices.Clone(groups)...); err != nil {
			return s, fmt.Errorf("%w: kafka lag of groups %v: %w", ErrUnavailable, groups, err)
		}
	}
	if len(k.cfg.ShareGroups) > 0 {
		if err := k.measureShare(ctx, &s); err != nil {
			return s, err
		}
	}
	for _, g := range lags.Sorted() {
		name, retry := g.Group, false
		if n, ok := as[name]; ok {
			name, retry = n, true
		}
		if err := g.Error(); err != nil {
			if !retry || !errors.Is(err, kerr.GroupIDNotFound) { // a retry topic nobody read yet: nothing behind
				s.GroupErrors[name] = err
			}
			continue
		}
		for _, ml := range g.Lag.Sorted() {
			p := PartitionLag{
				Group: name, Topic: ml.Topic, Partition: ml.Partition,
				Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag, Err: ml.Err,
			}
			if ml.Member != nil {
				p.Member = ml.Member.ClientID
				if p.Member == "" {
					p.Member = ml.Member.MemberID
				}
			}
			if p.Err != nil {
				p.Lag = -1
			}
			s.Partitions = append(s.Partitions, p)
		}
	}
	slices.SortFunc(s.Partitions, func(a, b PartitionLag) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if k.cfg.TimeLagPartitions > 0 {
		tctx, cancel := context.WithTimeout(ctx, k.cfg.TimeLagTimeout)
		k.timeLags(tctx, s.At, s.Partitions)
		cancel()
	}
	return s, nil
}
