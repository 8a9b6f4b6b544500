package kafka

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

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Defaults of LagConfig.
const (
	DefaultTimeLagPartitions = 64
	DefaultFetchMaxBytes     = 64 << 10
	DefaultTimeLagTimeout    = 5 * time.Second
	timeLagConcurrency       = 8
)

// LagConfig configures a LagMonitor.
type LagConfig struct {
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
func (c LagConfig) WithDefaults() LagConfig {
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
func (c LagConfig) Validate() error {
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

// LagMonitor measures consumer-group lag with kadm: the groups'
// committed offsets, the partitions' end offsets and the group members
// (kadm.Client.Lag, a handful of requests whatever the partition count).
// Lag in records is end − committed (end − log start when the group never
// committed). Lag in seconds is the age of the oldest unconsumed record:
// for each lagging partition (at most TimeLagPartitions per sample, the
// worst first) one Fetch request of at most FetchMaxBytes reads the record
// at the committed offset and its timestamp is subtracted from the sample
// time. It is a driver.GroupLagMonitor, safe for concurrent use.
type LagMonitor struct {
	cl    *kgo.Client
	adm   *kadm.Client
	cfg   LagConfig
	owned bool // Close closes cl
}

// NewLagMonitor returns a monitor using cl, a client of the cluster (it
// needs no consumer options; the caller keeps ownership and closes it).
func NewLagMonitor(cl *kgo.Client, cfg LagConfig) (*LagMonitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &LagMonitor{cl: cl, adm: kadm.NewClient(cl), cfg: cfg.WithDefaults()}, nil
}

// Close closes the client when the monitor opened it (the descriptor's
// Monitor); a client given to NewLagMonitor stays open.
func (k *LagMonitor) Close() error {
	if k.owned {
		k.cl.Close()
	}
	return nil
}

// MeasureGroups takes one sample of the configured groups. It fails
// (wrapping driver.ErrUnavailable) only when the cluster cannot be asked
// at all; a group or a partition that cannot be measured is reported in
// the sample.
func (k *LagMonitor) MeasureGroups(ctx context.Context) (driver.GroupSample, error) {
	s := driver.GroupSample{At: time.Now(), GroupErrors: map[string]error{}}
	groups, as := k.consumerGroups()
	var lags kadm.DescribedGroupLags
	if len(groups) > 0 || len(k.cfg.ShareGroups) == 0 {
		var err error
		// A copy: kadm.Lag reuses the slice it is given as scratch space.
		if lags, err = k.adm.Lag(ctx, slices.Clone(groups)...); err != nil {
			return s, fmt.Errorf("%w: kafka lag of groups %v: %w", driver.ErrUnavailable, groups, err)
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
			p := driver.PartitionLag{
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
	slices.SortFunc(s.Partitions, func(a, b driver.PartitionLag) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if k.cfg.TimeLagPartitions > 0 {
		tctx, cancel := context.WithTimeout(ctx, k.cfg.TimeLagTimeout)
		k.timeLags(tctx, s.At, s.Partitions)
		cancel()
	}
	return s, nil
}

// monitor is the descriptor's Monitor: a LagMonitor, on a client of its
// own, of the workers' groups (a worker of retry mode share: its share
// group, with its retry topic's consumer group) and of the DLQ keeper's
// (its lag on a DLQ topic that nothing consumes is alert DLQNotKept).
func monitor(_ context.Context, s driver.Settings, subs []broker.Subscription) (driver.Monitor, error) {
	cfg, err := configOf(s)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	groups := make([]string, 0, len(subs)+1)
	var share []ShareGroup
	for _, sub := range subs {
		groups = append(groups, sub.Group)
		if sub.RetryMode == broker.Share {
			share = append(share, ShareGroup{Group: sub.Group, RetryGroup: ShareRetryGroup(sub.Group)})
		}
	}
	groups = append(groups, cfg.KeeperGroup)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.clientOptions()...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: lag client for %v: %w", cfg.Brokers, err)
	}
	m, err := NewLagMonitor(cl, LagConfig{Groups: groups, ShareGroups: share})
	if err != nil {
		cl.Close()
		return nil, err
	}
	m.owned = true
	return m, nil
}
