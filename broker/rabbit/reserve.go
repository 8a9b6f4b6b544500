package rabbit

import (
	"fmt"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// A failed delivery is acked only once its copy (retry, dead letter, delay
// hop) is confirmed, and holds its prefetch place meanwhile: tens of
// milliseconds under load, so a worker failing hundreds of messages a second
// would consume with a fraction of its prefetch. While enough copies wait,
// the session consumes the queue a second time, a reserve consumer with a
// quarter of the prefetch and a lower priority (x-priority -1: RabbitMQ
// gives it deliveries only while the main consumer's prefetch is full), and
// cancels it once none has waited for reserveLinger. RabbitMQ applies a
// channel's per-consumer QoS to the consumers started after it, which is
// how the two get their own limits; no channel-wide QoS (deprecated, and
// refused by quorum queues) is needed.
const (
	// reserveShare: the reserve's prefetch is Prefetch / reserveShare; a
	// prefetch under reserveShare has none.
	reserveShare = 4
	// reserveStartShare: the reserve starts when Prefetch / reserveStartShare
	// deliveries (at least one) wait for their copies.
	reserveStartShare = 8
	reserveLinger     = time.Second
	reservePriority   = int32(-1)
)

// reserve counts a session's deliveries waiting for their copies' confirms
// and says when its reserve consumer should start or may stop.
type reserve struct {
	size    int   // the reserve consumer's prefetch; 0: never started
	start   int64 // waiting deliveries that start it
	waiting atomic.Int64
	// changed is signalled (never blocking) when waiting reaches start or
	// drops to zero.
	changed chan struct{}
}

func newReserve(prefetch int) *reserve {
	return &reserve{
		size:    prefetch / reserveShare,
		start:   max(1, int64(prefetch/reserveStartShare)),
		changed: make(chan struct{}, 1),
	}
}

// hold counts a delivery that waits for its copy's confirm.
func (r *reserve) hold() {
	if r.waiting.Add(1) == r.start {
		r.signal()
	}
}

// release undoes hold once the delivery is acked or requeued.
func (r *reserve) release() {
	if r.waiting.Add(-1) == 0 {
		r.signal()
	}
}

func (r *reserve) signal() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// wanted reports whether the reserve consumer should run now.
func (r *reserve) wanted() bool { return r.size > 0 && r.waiting.Load() >= r.start }

// idle reports whether no delivery waits.
func (r *reserve) idle() bool { return r.waiting.Load() == 0 }

// startReserve consumes the queue a second time with size as its prefetch
// and a lower priority than the main consumer, then sets the channel's QoS
// back to the main consumer's prefetch (for its next start after a pause).
func (s *subscriber) startReserve(size int) error {
	if err := s.ch.Qos(size, 0, false); err != nil {
		return fmt.Errorf("rabbit: set reserve prefetch %d: %w", size, err)
	}
	tag := fmt.Sprintf("redrive-%s-%s-reserve", s.c.sub.Group, broker.NewMessageID()[:8])
	d, err := s.ch.Consume(s.c.queue, tag, false, false, false, false, amqp.Table{"x-priority": reservePriority})
	if err != nil {
		return fmt.Errorf("rabbit: consume %q (reserve): %w", s.c.queue, err)
	}
	if err := s.ch.Qos(s.c.sub.Prefetch, 0, false); err != nil {
		return fmt.Errorf("rabbit: set prefetch %d: %w", s.c.sub.Prefetch, err)
	}
	s.reserveTag, s.reserved, s.reserveDraining = tag, d, false
	s.c.log.Debug("rabbit: reserve consumer started: deliveries wait for their copies' confirms", "prefetch", size)
	return nil
}

// stopReserve cancels the reserve consumer; what it was sent still arrives
// on s.reserved, which the library then closes.
func (s *subscriber) stopReserve() {
	if s.reserved == nil || s.reserveDraining {
		return
	}
	_ = s.ch.Cancel(s.reserveTag, false)
	s.reserveDraining = true
	s.c.log.Debug("rabbit: reserve consumer cancelled: no delivery waits for a copy")
}

// returnReserve cancels the reserve consumer, if any, and requeues what it
// was sent and not yet handed to a handler (a pause).
func (s *subscriber) returnReserve() (returned int) {
	if s.reserved == nil {
		return 0
	}
	if s.reserveDraining {
		for m := range s.reserved {
			_ = m.Nack(false, true)
			returned++
		}
	} else {
		returned = cancelAndReturn(s.ch, s.reserveTag, s.reserved)
	}
	s.reserved, s.reserveDraining = nil, false
	return returned
}
