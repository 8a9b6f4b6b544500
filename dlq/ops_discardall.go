package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// DiscardAllOptions configure DiscardAll.
type DiscardAllOptions struct {
	// Actor is written in every audit row; Reason (required) too.
	Actor  string
	Reason string
	// Rate bounds discards per second: 0 = as fast as the store allows,
	// else from MinReplayRate to MaxReplayRate (ErrInvalidQuery outside).
	Rate float64
	// Stop, when closed, stops DiscardAll before its next entry (the rest
	// stay pending) and it returns ErrStopped.
	Stop <-chan struct{}
	// Progress, when set, is called after each entry with the progress so
	// far (Replayed counts the discarded entries), and once more at the
	// end with Done set.
	Progress func(Progress)
}

// DiscardAll discards the pending entries of q.DLQ that q selects
// (ErrorClass, Text, Group, Since, Until; q.Status must be empty or
// pending), oldest first, one by one with the status change and audit row
// of Discard (action discard, opts.Reason), at most opts.Rate per second.
// Entries received after it started are left alone. It lists the store a
// page at a time without payloads. It stops when ctx ends or opts.Stop is
// closed, and returns the progress (Replayed counting the discarded
// entries, Skipped those no longer pending when their turn came).
func (o *Ops) DiscardAll(ctx context.Context, q Query, opts DiscardAllOptions) (Progress, error) {
	var p Progress
	reason := strings.TrimSpace(opts.Reason)
	switch {
	case q.DLQ == "":
		return p, fmt.Errorf("dlq: discard all: %w: dlq: required", ErrInvalidQuery)
	case reason == "":
		return p, fmt.Errorf("dlq: discard all %s: %w", q.DLQ, ErrReasonRequired)
	case q.Status != "" && q.Status != StatusPending:
		return p, fmt.Errorf("dlq: discard all: %w: status: only pending entries are discarded", ErrInvalidQuery)
	case !ValidReplayRate(opts.Rate):
		return p, fmt.Errorf("dlq: discard all: %w: rate: %v is not 0 or from %v to %v per second", ErrInvalidQuery, opts.Rate, MinReplayRate, MaxReplayRate)
	}
	q.Status, q.Cursor, q.NewestFirst, q.Limit = StatusPending, "", false, 100
	if start := o.now(); q.Until.IsZero() || q.Until.After(start) {
		q.Until = start
	}
	if err := q.Validate(); err != nil {
		return p, fmt.Errorf("dlq: discard all %s: %w", q.DLQ, err)
	}
	total, err := o.store.Count(ctx, q)
	if err != nil {
		return p, fmt.Errorf("dlq: discard all %s: count: %w", q.DLQ, err)
	}
	p.Total = total
	report := func() {
		if opts.Progress != nil {
			opts.Progress(p)
		}
	}
	finish := func(err error) (Progress, error) {
		p.Done = true
		report()
		if err != nil {
			return p, fmt.Errorf("dlq: discard all %s: %w", q.DLQ, err)
		}
		return p, nil
	}
	report()
	pace := newPacer(opts.Rate)
	actor := cleanActor(opts.Actor)
	for {
		page, err := o.store.List(ctx, q)
		if err != nil {
			return finish(err)
		}
		for _, r := range page.Records {
			if err := pace.wait(ctx, opts.Stop); err != nil {
				return finish(err)
			}
			_, err := o.store.Transition(ctx, Transition{
				DLQ: r.DLQ, ID: r.ID, From: []Status{StatusPending}, To: StatusDiscarded,
				Actor: actor, Action: ActionDiscard, Reason: clip(reason), At: o.now(),
			})
			switch {
			case errors.Is(err, ErrNotPending) || errors.Is(err, ErrNotFound):
				p.Skipped++
			case err != nil:
				p.Failed++
				return finish(err)
			default:
				p.Replayed++
			}
			report()
		}
		if page.Next == "" {
			o.log.Info("dlq: discarded all", "dlq", q.DLQ, "discarded", p.Replayed, "actor", actor, "reason", reason)
			return finish(nil)
		}
		q.Cursor = page.Next
	}
}
