package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
)

// requeuePause is how long a record handed back (broker.Requeue) waits
// before it is handled again.
const requeuePause = 10 * time.Millisecond

// handBack is what becomes of a record whose handler returned
// broker.Requeue: it is handled again in place with the same attempt (its
// offset uncommitted meanwhile), after a short pause so that a handler
// that keeps handing back does not spin. It returns false when the worker
// is halted first (the record is left for whoever consumes the partition
// next).
func (p *partition) handBack(r *kgo.Record, d *broker.Delivery) bool {
	p.log.Debug("handed back; handling again", "offset", r.Offset, "message_id", d.ID, "attempt", d.Attempt)
	return p.sleepUntil(time.Now().Add(requeuePause))
}
