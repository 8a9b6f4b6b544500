package operate

import (
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
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
func (o *Ops) DiscardAll(ctx context.Context, q dlq.Query, opts DiscardAllOptions) (Progress, error) {
	reason := strings.TrimSpace(opts.Reason)
	if reason == "" && q.DLQ != "" {
		return Progress{}, fmt.Errorf("dlq: discard all %s: %w", q.DLQ, ErrReasonRequired)
	}
	b, err := newBulk("discard all", q, opts.Rate, 100, o.now(), opts.Progress)
	if err != nil {
		return Progress{}, err
	}
	if err := b.count(ctx, o.store); err != nil {
		return b.p, err
	}
	b.report()
	pace := newPacer(opts.Rate)
	actor := dlq.AuditActor(opts.Actor)
	p, err := b.run(ctx, o.store, func(records []dlq.Record) error {
		for _, r := range records {
			if err := pace.wait(ctx, opts.Stop); err != nil {
				return err
			}
			_, err := o.store.Transition(ctx, dlq.Transition{
				DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded,
				Actor: actor, Action: dlq.ActionDiscard, Reason: dlq.AuditReason(reason), At: o.now(),
			})
			switch {
			case errors.Is(err, dlq.ErrNotPending) || errors.Is(err, dlq.ErrNotFound):
				b.p.Skipped++
			case err != nil:
				b.p.Failed++
				return err
			default:
				b.p.Replayed++
			}
			b.report()
		}
		o.refreshSoon()
		return nil
	}, nil)
	if err == nil {
		o.log.Info("dlq: discarded all", "dlq", q.DLQ, "discarded", p.Replayed, "actor", actor, "reason", reason)
	}
	return p, err
}
