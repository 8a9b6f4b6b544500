package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

var _ dlq.Republisher = (*Broker)(nil)

// Republish implements dlq.Republisher: it puts the dead letter e back,
// byte for byte (key, value, application headers, message id), with
// x-redrive-replayed-from set to replayedFrom, and returns once the broker
// acknowledged it. It goes to the retry topic of the group that gave up on
// it (<topic>.retry.<worker>), so that only that group handles it again;
// when that topic does not exist (a foreign dead letter, or a group that
// never ran), to the original topic, which every group reads. The replay is
// stamped now: the group's max age counts from the replay.
func (b *Broker) Republish(ctx context.Context, e dlq.Entry, replayedFrom string) error {
	if b.isClosed() {
		return broker.ErrClosed
	}
	if e.OriginalTopic == "" {
		return errors.New("kafka: republish: entry has no original topic")
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.DeliveryTimeout)
	defer cancel()
	target := e.OriginalTopic
	if e.Worker != "" {
		retry := RetryTopic(e.OriginalTopic, e.Worker)
		exists, err := b.topicExists(ctx, retry)
		if err != nil {
			return fmt.Errorf("kafka: republish (brokers %s): %w", b.brokerList(), err)
		}
		if exists {
			target = retry
		}
	}
	h := make(map[string]string, len(e.OriginalHeaders)+3)
	maps.Copy(h, e.OriginalHeaders)
	h[broker.HeaderReplayedFrom] = replayedFrom
	h[broker.HeaderMessageID] = e.MessageID
	if e.MessageID == "" {
		h[broker.HeaderMessageID] = broker.NewMessageID()
	}
	r := &kgo.Record{Topic: target, Key: e.OriginalKey, Value: e.OriginalValue, Headers: toHeaders(h), Timestamp: time.Now()}
	if err := b.produce(ctx, r); err != nil {
		return fmt.Errorf("kafka: republish %s to %q: %w", replayedFrom, target, err)
	}
	return nil
}

// topicExists reports whether topic exists, remembering the ones that do.
func (b *Broker) topicExists(ctx context.Context, topic string) (bool, error) {
	if b.isKnown(topic) {
		return true, nil
	}
	details, err := b.describeTopics(ctx, topic)
	if err != nil {
		return false, err
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		b.markKnown(topic)
		return true, nil
	}
	return false, nil
}

var _ dlq.ReplayTargeter = (*Broker)(nil)

// ReplayTarget implements dlq.ReplayTargeter: the retry topic of the
// worker that gave up on e, or, for an entry that names none, its
// original topic (every group of it). Republish falls back to the original
// topic too when the retry topic does not exist.
func (b *Broker) ReplayTarget(e dlq.Entry) (target, worker string) {
	if e.Worker != "" {
		return RetryTopic(e.OriginalTopic, e.Worker), e.Worker
	}
	return e.OriginalTopic, ""
}
