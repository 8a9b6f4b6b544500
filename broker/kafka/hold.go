package kafka

import (
	"context"
	"sync"
)

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

// holdState is the pause the consumer last applied to its client.
type holdState struct {
	mu      sync.Mutex
	applied bool
}

// applyHold pauses or resumes fetching of the consumer's topics as its
// hold says; a no-op before the group client exists (consume applies it
// once it does).
func (c *consumer) applyHold() {
	cl := c.client()
	if cl == nil {
		return
	}
	on, _ := c.b.holds.Of(c.sub.Topic, c.sub.Group).State()
	c.hs.mu.Lock()
	defer c.hs.mu.Unlock()
	if on == c.hs.applied {
		return
	}
	c.hs.applied = on
	if on {
		cl.PauseFetchTopics(c.sub.Topic, c.retryTopic)
		c.log.Info("consumer paused: fetching stopped")
	} else {
		cl.ResumeFetchTopics(c.sub.Topic, c.retryTopic)
		c.log.Info("consumer resumed: fetching again")
	}
}

// watchHold applies the consumer's hold (PauseConsume) until ctx ends.
func (c *consumer) watchHold(ctx context.Context) {
	hold := c.b.holds.Of(c.sub.Topic, c.sub.Group)
	for {
		_, changed := hold.State()
		c.applyHold()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
