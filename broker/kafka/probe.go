package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker/driver"
)

// ErrNotConsuming is returned by ConsumerReady for a topic and group no
// Consume call of this Broker runs.
var ErrNotConsuming = driver.NewError("kafka: not consuming", driver.ErrNotConsuming)

// consumerKey names the consumers of one Consume subscription.
type consumerKey struct{ topic, group string }

// track registers c as a consumer of topic/group until the returned
// function is called.
func (b *Broker) track(topic, group string, c *consumer) (untrack func()) {
	k := consumerKey{topic, group}
	b.mu.Lock()
	if b.consumers == nil {
		b.consumers = make(map[consumerKey][]*consumer)
	}
	b.consumers[k] = append(b.consumers[k], c)
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		cs := b.consumers[k]
		for i, x := range cs {
			if x == c {
				b.consumers[k] = append(cs[:i:i], cs[i+1:]...)
				break
			}
		}
		if len(b.consumers[k]) == 0 {
			delete(b.consumers, k)
		}
	}
}

// tracked returns the consumers of topic/group.
func (b *Broker) tracked(topic, group string) []*consumer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*consumer(nil), b.consumers[consumerKey{topic, group}]...)
}

// ConsumerLag returns the records waiting for the Consume calls of topic
// and group in this process, from the clients' own fetch state (no request
// to the cluster): for every partition of topic these consumers own, the
// high watermark the last fetch reported minus the offset of the first
// record not yet done (handled, retried or dead-lettered). Records waiting
// in the group's retry topic are not counted. While a partition's fetching
// is paused (its worker's buffer is full) its high watermark is the one of
// its last fetch, so the lag is then a lower bound. 0 when nothing of the
// topic was fetched yet.
//
// For a share-mode Consume (broker.Share) it is the share group's lag on
// topic, from the cluster (ShareLag).
func (b *Broker) ConsumerLag(ctx context.Context, topic, group string) (int64, error) {
	if b.sharing(topic, group) {
		return b.ShareLag(ctx, topic, group)
	}
	var n int64
	for _, c := range b.tracked(topic, group) {
		for _, p := range c.current() {
			if p.topic == topic {
				n += p.lag()
			}
		}
	}
	return n, nil
}

// ConsumerReady returns nil when a Consume call of topic and group runs in
// this process and its client reaches the cluster (an ApiVersions round
// trip, bounded by ctx); else why not.
func (b *Broker) ConsumerReady(ctx context.Context, topic, group string) error {
	cs := b.tracked(topic, group)
	if len(cs) == 0 {
		return fmt.Errorf("%w: %s as %s", ErrNotConsuming, topic, group)
	}
	for _, c := range cs {
		cl := c.client()
		if cl == nil {
			return fmt.Errorf("%w: %s as %s: starting", ErrNotConsuming, topic, group)
		}
		if err := cl.Ping(ctx); err != nil {
			return fmt.Errorf("kafka: %s as %s: cluster unreachable: %w", topic, group, err)
		}
	}
	return nil
}

// lag is the partition's share of ConsumerLag.
func (p *partition) lag() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.done.Offset
	if next < 0 {
		next = p.first
	}
	if next < 0 || p.hwm < 0 {
		return 0
	}
	return max(p.hwm-next, 0)
}

// client returns the group client once consume created it, else nil.
func (c *consumer) client() *kgo.Client { return c.clp.Load() }
