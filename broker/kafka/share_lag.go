package kafka

import (
	"context"
	"fmt"
)

// trackShare registers a share-mode Consume of topic/group until the
// returned function is called: ConsumerLag then asks the cluster.
func (b *Broker) trackShare(topic, group string) (untrack func()) {
	k := consumerKey{topic, group}
	b.share.mu.Lock()
	if b.share.running == nil {
		b.share.running = make(map[consumerKey]int)
	}
	b.share.running[k]++
	b.share.mu.Unlock()
	return func() {
		b.share.mu.Lock()
		defer b.share.mu.Unlock()
		if b.share.running[k]--; b.share.running[k] <= 0 {
			delete(b.share.running, k)
		}
	}
}

// sharing reports whether a share-mode Consume of topic/group runs.
func (b *Broker) sharing(topic, group string) bool {
	b.share.mu.Lock()
	defer b.share.mu.Unlock()
	return b.share.running[consumerKey{topic, group}] > 0
}

// ShareLag returns the records of topic its share group group has not
// finished (KIP-932's share-partition lag, summed over the partitions: the
// records from the share-partition start offset to the end that are not
// acknowledged yet, those a member holds included), from the cluster
// (DescribeShareGroupOffsets). 0 when the group has no state for the
// topic yet.
func (b *Broker) ShareLag(ctx context.Context, topic, group string) (int64, error) {
	described, err := b.adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("kafka: share group offsets of %q: %w", group, err)
	}
	d, ok := described[group]
	if !ok {
		return 0, nil
	}
	if d.Err != nil {
		return 0, fmt.Errorf("kafka: share group offsets of %q: %w", group, d.Err)
	}
	var n int64
	for _, o := range d.Offsets[topic] {
		if o.Err != nil {
			return 0, fmt.Errorf("kafka: share group offsets of %q on %s/%d: %w", group, topic, o.Partition, o.Err)
		}
		n += max(o.Lag, 0)
	}
	return n, nil
}
