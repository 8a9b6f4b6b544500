package kafka

import "time"

// requeuePause is how long a record handed back (broker.Requeue) waits
// before it is handled again.
const requeuePause = 10 * time.Millisecond

// handBack executes the pipeline's Requeue decision about a record (its
// handler returned broker.Requeue): the record is handled again in place
// with the same attempt (its offset uncommitted meanwhile), after a short
// pause so that a handler that keeps handing back does not spin. It returns false when the worker
// is halted first (the record is left for whoever consumes the partition
// next).
func (p *partition) handBack() bool {
	return p.sleepUntil(time.Now().Add(requeuePause))
}
