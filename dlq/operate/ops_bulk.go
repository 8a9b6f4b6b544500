package operate

import (
	"context"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"time"
)

// bulk is the frame ReplayAll and DiscardAll share: the pending entries of
// one DLQ that a query selects, oldest first and received before the run
// started, listed a page at a time without payloads, with the progress
// reported after each entry and once more at the end.
type bulk struct {
	op       string // "replay all", "discard all": the errors' prefix
	q        dlq.Query
	p        Progress
	progress func(Progress)
}

// newBulk checks and normalises q and rate for op (q.Status must be empty
// or pending, rate 0 or from MinReplayRate to MaxReplayRate) and pages by
// pageSize (default 100, at most MaxLimit), leaving alone the entries
// received after start. The errors wrap
// ErrInvalidQuery and name the field.
func newBulk(op string, q dlq.Query, rate float64, pageSize int, start time.Time, progress func(Progress)) (*bulk, error) {
	switch {
	case q.DLQ == "":
		return nil, fmt.Errorf("dlq: %s: %w: dlq: required", op, dlq.ErrInvalidQuery)
	case q.Status != "" && q.Status != dlq.StatusPending:
		return nil, fmt.Errorf("dlq: %s: %w: status: only pending entries are selected", op, dlq.ErrInvalidQuery)
	case !ValidReplayRate(rate):
		return nil, fmt.Errorf("dlq: %s: %w: rate: %v is not 0 or from %v to %v per second", op, dlq.ErrInvalidQuery, rate, MinReplayRate, MaxReplayRate)
	}
	q.Status, q.Cursor, q.NewestFirst = dlq.StatusPending, "", false
	q.Limit = pageSize
	if q.Limit <= 0 || q.Limit > dlq.MaxLimit {
		q.Limit = 100
	}
	if q.Until.IsZero() || q.Until.After(start) {
		q.Until = start
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("dlq: %s %s: %w", op, q.DLQ, err)
	}
	return &bulk{op: op, q: q, progress: progress}, nil
}

// errorf wraps err with the run's operation and DLQ.
func (b *bulk) errorf(format string, err error) error {
	return fmt.Errorf("dlq: %s %s: "+format, b.op, b.q.DLQ, err)
}

// count sets the total to the number of entries the query selects.
func (b *bulk) count(ctx context.Context, s dlq.Store) error {
	total, err := s.Count(ctx, b.q)
	if err != nil {
		return b.errorf("count: %w", err)
	}
	b.p.Total = total
	return nil
}

// report passes the progress so far to the caller's callback.
func (b *bulk) report() {
	if b.progress != nil {
		b.progress(b.p)
	}
}

// finish reports the last progress (Done set) and returns it with err
// wrapped.
func (b *bulk) finish(err error) (Progress, error) {
	b.p.Done = true
	b.report()
	if err != nil {
		return b.p, b.errorf("%w", err)
	}
	return b.p, nil
}

// run lists the store from the query's cursor a page at a time and hands
// each page's records to each; after a page that is not the last it
// calls checkpoint (when set) with the progress and the next cursor. It
// returns through finish.
func (b *bulk) run(ctx context.Context, s dlq.Store, each func([]dlq.Record) error, checkpoint func(Progress, string) error) (Progress, error) {
	for {
		page, err := s.List(ctx, b.q)
		if err != nil {
			return b.finish(err)
		}
		if err := each(page.Records); err != nil {
			return b.finish(err)
		}
		if page.Next == "" {
			return b.finish(nil)
		}
		b.q.Cursor = page.Next
		if checkpoint != nil {
			if err := checkpoint(b.p, b.q.Cursor); err != nil {
				return b.finish(err)
			}
		}
	}
}
