package driver

import "sync"

// Hold is a pause switch that a backend's consumers of one subscription
// watch: while it is on they take no delivery from the broker (RabbitMQ:
// the consumer is cancelled, so that what was prefetched goes back to the
// queue; Kafka: fetching the subscription's partitions is paused). The
// worker runtime turns it on while an operator paused the worker or its
// kill switch is open. The zero value is off and ready to use; its
// methods are safe for concurrent use.
type Hold struct {
	mu      sync.Mutex
	on      bool
	changed chan struct{}
}

// Set turns the hold on or off and wakes the watchers when it changed.
func (h *Hold) Set(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on == on {
		return
	}
	h.on = on
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

// State returns whether the hold is on and a channel closed at its next
// change.
func (h *Hold) State() (on bool, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.on, h.changed
}

// Holds are the holds of one process's subscriptions, by topic and group.
type Holds struct{ m sync.Map }

// Of returns the hold of topic/group, created off.
func (hs *Holds) Of(topic, group string) *Hold {
	v, _ := hs.m.LoadOrStore(topic+"\x00"+group, new(Hold))
	return v.(*Hold)
}
