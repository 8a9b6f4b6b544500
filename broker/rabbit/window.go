package rabbit

import (
	"fmt"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// confirmWindow keeps the deliveries whose copy waits for its confirm
// from counting against the subscription's prefetch, on classic queues.
//
// A delivery that failed is acked only once its retry, dead-letter,
// hand-back or delay-hop copy is confirmed, and a confirm takes as long
// as the broker takes to store the copy: tens of milliseconds under load
// (about 30 in `redrive bench`'s retry row), while a copy is refused
// (forward retries it) for as long as the refusal lasts. Counted against a
// fixed prefetch, those deliveries leave the handlers without work. A
// consumer's own prefetch cannot change once it consumes, but a channel's
// can (RabbitMQ's "global" QoS, applied at once), so a classic queue's
// consume channel carries two limits: the consumer's, Prefetch + headroom
// (headroom = Prefetch), the hard bound; and the channel's, Prefetch + the
// deliveries waiting for a confirm (in quarters of Prefetch, lowered
// only when two quarters fewer wait or none, so that it changes a few
// times a second, not per copy), at most Prefetch + headroom. Handlers thus
// keep about Prefetch deliveries whatever the confirms' latency. Quorum
// queues refuse a channel limit (NOT_IMPLEMENTED): there a waiting
// delivery counts against Prefetch.
type confirmWindow struct {
	base, headroom, step int
	// waiting counts the deliveries whose copy waits for its confirm.
	waiting atomic.Int64
	// changed is signalled when waiting changes; nil when the window is
	// off (a quorum queue, or prefetch 0: no limit at all).
	changed chan struct{}
	// limit is the channel limit set last; only the session loop uses it.
	limit int
}

// newConfirmWindow returns the window of a consume channel with prefetch
// base; classic reports whether the queue takes a channel limit.
func newConfirmWindow(base int, classic bool) *confirmWindow {
	w := &confirmWindow{base: base, limit: base}
	if classic && base > 0 {
		w.headroom = min(base, broker.MaxPrefetch-base)
		w.step = max(1, base/4)
		w.changed = make(chan struct{}, 1)
	}
	return w
}

// forwarders is how many copies may be in flight at once: a forwarder
// each, so that a handler never waits for one.
func (w *confirmWindow) forwarders() int { return w.base + w.headroom }

// setup sets the consume channel's limits; it runs before the channel
// consumes.
func (w *confirmWindow) setup(ch *amqp.Channel) error {
	if err := ch.Qos(w.base+w.headroom, 0, false); err != nil {
		return fmt.Errorf("rabbit: set prefetch %d: %w", w.base+w.headroom, err)
	}
	if w.changed == nil {
		return nil
	}
	if err := ch.Qos(w.base, 0, true); err != nil {
		return fmt.Errorf("rabbit: set channel prefetch %d: %w", w.base, err)
	}
	return nil
}

// add counts n more (or, negative, fewer) deliveries waiting for their
// copy's confirm.
func (w *confirmWindow) add(n int64) {
	if w.changed == nil {
		return
	}
	w.waiting.Add(n)
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// apply sets the channel limit the waiting deliveries ask for: raised at
// once to the quarters of Prefetch they fill, lowered when they fill two
// quarters fewer, or none. Only the session loop calls it: the calls of an
// amqp091 channel that wait for a reply (Qos, Consume, Cancel) must not
// overlap.
func (w *confirmWindow) apply(ch *amqp.Channel) error {
	limit, ok := w.next()
	if !ok {
		return nil
	}
	if err := ch.Qos(limit, 0, true); err != nil {
		return fmt.Errorf("rabbit: set channel prefetch %d: %w", limit, err)
	}
	w.limit = limit
	return nil
}

// next returns the channel limit for the deliveries waiting now, and
// whether it is to be set (see apply).
func (w *confirmWindow) next() (limit int, change bool) {
	if w.changed == nil {
		return w.limit, false
	}
	waiting := int(max(w.waiting.Load(), 0))
	want := min(w.headroom, (waiting+w.step-1)/w.step*w.step)
	allowance := w.limit - w.base
	if want == allowance || want < allowance && want > 0 && want >= allowance-w.step {
		return w.limit, false
	}
	return w.base + want, true
}
