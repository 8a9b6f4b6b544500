package kafka

import "context"

// PauseConsume makes this process's consumers of topic/group stop taking
// records until ResumeConsume: fetching the topic and the group's retry
// topic is paused, every partition of them (a partition assigned
// meanwhile too). Records already fetched stay buffered; offsets are
// committed only up to records that are done, as always, so a rebalance
// meanwhile hands the rest on. Consume keeps running (the member stays in
// its group). The worker runtime calls it while an operator paused the
// worker or its kill switch is open, and holds the buffered records at
// its gate.
func (b *Broker) PauseConsume(topic, group string) { b.holds.Of(topic, group).Set(true) }

// ResumeConsume undoes PauseConsume.
func (b *Broker) ResumeConsume(topic, group string) { b.holds.Of(topic, group).Set(false) }

// watchHold applies the consumer's hold (PauseConsume) to its client,
// from the moment the client exists until ctx ends: it pauses or resumes
// fetching the topic and the group's retry topic.
func (c *consumer) watchHold(ctx context.Context) {
	c.b.followHold(ctx, c.sub.Topic, c.sub.Group, func(on bool) {
		if on {
			c.cl.PauseFetchTopics(c.sub.Topic, c.retryTopic)
			c.log.Info("consumer paused: fetching stopped")
		} else {
			c.cl.ResumeFetchTopics(c.sub.Topic, c.retryTopic)
			c.log.Info("consumer resumed: fetching again")
		}
	})
}

// followHold calls apply with the hold of topic/group (PauseConsume)
// each time it changes, the first time when it is on, until ctx ends.
func (b *Broker) followHold(ctx context.Context, topic, group string, apply func(on bool)) {
	hold := b.holds.Of(topic, group)
	applied := false
	for {
		on, changed := hold.State()
		if on != applied {
			applied = on
			apply(on)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
