package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/redrive/redrive/broker/driver"
)

// ShareGroup is a share group (KIP-932) to measure: a Kafka worker of
// retry mode share consumes its topic as the share group named after it,
// and its retry topic as a consumer group of its own.
type ShareGroup struct {
	// Group is the share group: the worker's name.
	Group string
	// RetryGroup is the consumer group that reads the worker's retry topic
	// (ShareRetryGroup); its partitions are reported under
	// Group, as a non_blocking worker's retry topic is. Empty = none.
	RetryGroup string
}

// consumerGroups returns the consumer groups Measure asks kadm for: the
// configured groups that are not share groups, and the share groups'
// retry groups, with the name each retry group is reported under.
func (k *LagMonitor) consumerGroups() (groups []string, as map[string]string) {
	as = map[string]string{}
	for _, g := range k.cfg.Groups {
		if !slices.ContainsFunc(k.cfg.ShareGroups, func(s ShareGroup) bool { return s.Group == g }) {
			groups = append(groups, g)
		}
	}
	for _, s := range k.cfg.ShareGroups {
		if s.RetryGroup != "" {
			groups = append(groups, s.RetryGroup)
			as[s.RetryGroup] = s.Group
		}
	}
	return groups, as
}

// measureShare adds the partitions of the share groups to s: Committed is
// the share-partition start offset (the first record not yet finished),
// End the partition's end, Lag what the broker counts (the records from
// the start offset to the end not yet acknowledged, those members hold
// included), Member the first member assigned (share groups assign a
// partition to several).
func (k *LagMonitor) measureShare(ctx context.Context, s *driver.GroupSample) error {
	names := make([]string, len(k.cfg.ShareGroups))
	for i, g := range k.cfg.ShareGroups {
		names[i] = g.Group
	}
	offsets, err := k.adm.DescribeShareGroupOffsets(ctx, names...)
	if err != nil && offsets == nil {
		return fmt.Errorf("%w: kafka share group offsets of %v: %w", driver.ErrUnavailable, names, err)
	}
	described, _ := k.adm.DescribeShareGroups(ctx, names...)
	var topics []string
	for _, g := range names {
		if d, ok := offsets[g]; ok {
			for t := range d.Offsets {
				if !slices.Contains(topics, t) {
					topics = append(topics, t)
				}
			}
		}
	}
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		if ends, err = k.adm.ListEndOffsets(ctx, topics...); err != nil && ends == nil {
			return fmt.Errorf("%w: kafka end offsets of %v: %w", driver.ErrUnavailable, topics, err)
		}
	}
	for _, g := range names {
		d, ok := offsets[g]
		switch {
		case !ok:
			s.GroupErrors[g] = fmt.Errorf("share group offsets not returned")
			continue
		case d.Err != nil:
			s.GroupErrors[g] = d.Err
			continue
		}
		members := shareAssignees(described[g])
		d.Offsets.Each(func(o kadm.ShareOffset) {
			p := driver.PartitionLag{Group: g, Topic: o.Topic, Partition: o.Partition, Share: true,
				Committed: o.StartOffset, End: -1, Lag: o.Lag, Err: o.Err, Member: members[tp{o.Topic, o.Partition}]}
			if e, ok := ends.Lookup(o.Topic, o.Partition); ok && e.Err == nil {
				p.End = e.Offset
			} else if p.Err == nil && ok {
				p.Err = e.Err
			}
			switch {
			case p.Err != nil:
				p.Lag = -1
			case p.Lag < 0 && p.Committed >= 0 && p.End >= 0: // a broker before KIP-1226: no lag field
				p.Lag = max(p.End-p.Committed, 0)
			case p.Lag < 0: // no state yet: the group never fetched the partition
				p.Lag = 0
			}
			s.Partitions = append(s.Partitions, p)
		})
	}
	return nil
}

// shareAssignees returns the first member (client id, else member id) the
// share group assigns each partition to.
func shareAssignees(d kadm.DescribedShareGroup) map[tp]string {
	out := map[tp]string{}
	for _, m := range d.Members {
		id := m.ClientID
		if id == "" {
			id = m.MemberID
		}
		for t, ps := range m.Assignment {
			for p := range ps {
				if _, ok := out[tp{t, p}]; !ok {
					out[tp{t, p}] = id
				}
			}
		}
	}
	return out
}
