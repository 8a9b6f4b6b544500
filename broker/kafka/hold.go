package kafka

import "context"

// PauseConsume makes this process's consumers of topic/group stop taking
// records until ResumeConsume: fetching every partition they own (of the
// topic and of the group's retry topic) is paused, and so is fetching a
// partition assigned meanwhile. Records already fetched stay buffered;
// offsets are committed only up to records that are done, as always, so a
// rebalance meanwhile hands the rest on. Consume keeps running (the
// member stays in its group). The worker runtime calls it while an
// operator paused the worker or its kill switch is open.
func (b *Broker) PauseConsume(topic, group string) { b.holds.Of(topic, group).Set(true) }

// ResumeConsume undoes PauseConsume.
func (b *Broker) ResumeConsume(topic, group string) { b.holds.Of(topic, group).Set(false) }

// watchHold applies the consumer's hold (PauseConsume) to its partitions
// until ctx ends.
func (c *consumer) watchHold(ctx context.Context) {
	hold := c.b.holds.Of(c.sub.Topic, c.sub.Group)
	for {
		on, changed := hold.State()
		if c.held.Swap(on) != on {
			for _, p := range c.current() {
				p.mu.Lock()
				if on {
					p.pauseLocked()
				} else {
					p.maybeResumeLocked()
				}
				p.mu.Unlock()
			}
			if on {
				c.log.Info("consumer paused: fetching stopped")
			} else {
				c.log.Info("consumer resumed: fetching again")
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
