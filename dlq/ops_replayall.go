package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Replay-all rate bounds, in messages per second (ReplayAllOptions.Rate,
// the admin API's rate parameter). 0 is allowed too: as fast as the broker
// confirms.
const (
	MinReplayRate = 0.1
	MaxReplayRate = 100_000
)

// ValidReplayRate reports whether rate is 0 (as fast as the broker
// confirms) or from MinReplayRate to MaxReplayRate.
func ValidReplayRate(rate float64) bool {
	return rate == 0 || rate >= MinReplayRate && rate <= MaxReplayRate
}

// ParseReplayRate reads a replay-all rate written as text (a query
// parameter, a form field, a flag): 0 or MinReplayRate to MaxReplayRate.
// The error says what is accepted; it does not name the field.
func ParseReplayRate(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !ValidReplayRate(f) {
		return 0, fmt.Errorf("%.40q is not 0 (as fast as the broker confirms) or a number of messages per second from %v to %v",
			s, MinReplayRate, MaxReplayRate)
	}
	if f == 0 {
		return 0, nil // not -0
	}
	return f, nil
}

// ErrStopped is returned by ReplayAll when ReplayAllOptions.Stop was
// closed.
var ErrStopped = errors.New("replay all stopped")

// ReplayAllOptions configure ReplayAll.
type ReplayAllOptions struct {
	// Actor is written in every audit row.
	Actor string
	// Rate bounds replays per second: 0 = as fast as the broker confirms,
	// else from MinReplayRate to MaxReplayRate (ErrInvalidQuery outside).
	Rate float64
	// Stop, when closed, stops ReplayAll before its next entry: the entry
	// being replayed is finished (the broker's answer recorded), the rest
	// stay pending, and ReplayAll returns ErrStopped.
	Stop <-chan struct{}
	// Progress, when set, is called after each entry with the progress so
	// far, and once more at the end with Done set. It runs on ReplayAll's
	// goroutine and should return quickly.
	Progress func(Progress)
	// PageSize is how many records are read from the store at a time;
	// default 100, at most MaxLimit.
	PageSize int
}

// Progress is how far a ReplayAll has come.
type Progress struct {
	// Total is how many pending entries the filter selected at the start.
	Total int64
	// Replayed entries are replayed; Skipped ones were no longer pending
	// when their turn came; Failed ones were refused by the broker (pending
	// again).
	Replayed int64
	Skipped  int64
	Failed   int64
	// Done is set on the last report.
	Done bool
}

// ReplayAll replays the pending entries of q.DLQ that q selects (ErrorClass,
// Text, Since, Until; q.Status must be empty or pending), oldest first, one
// by one with the steps and audit rows of Replay, at most opts.Rate per
// second. It reads the store a page at a time, so memory stays bounded.
// Entries received after it started are left alone, so that a replayed
// message that fails again is not replayed in a loop. It stops at the
// first failed replay (that entry is pending again) or when ctx ends, and
// returns the progress with the error; running it again resumes, since
// replayed entries are no longer pending.
func (o *Ops) ReplayAll(ctx context.Context, q Query, opts ReplayAllOptions) (Progress, error) {
	var p Progress
	if o.pub == nil {
		return p, ErrNoRepublisher
	}
	if q.DLQ == "" {
		return p, fmt.Errorf("dlq: replay all: %w: dlq: required", ErrInvalidQuery)
	}
	if q.Status != "" && q.Status != StatusPending {
		return p, fmt.Errorf("dlq: replay all: %w: status: only pending entries are replayed", ErrInvalidQuery)
	}
	if !ValidReplayRate(opts.Rate) {
		return p, fmt.Errorf("dlq: replay all: %w: rate: %v is not 0 or from %v to %v messages per second", ErrInvalidQuery, opts.Rate, MinReplayRate, MaxReplayRate)
	}
	q.Status, q.Cursor, q.NewestFirst = StatusPending, "", false
	q.Limit = opts.PageSize
	if q.Limit <= 0 || q.Limit > MaxLimit {
		q.Limit = 100
	}
	if start := o.now(); q.Until.IsZero() || q.Until.After(start) {
		q.Until = start
	}
	if err := q.Validate(); err != nil {
		return p, fmt.Errorf("dlq: replay all %s: %w", q.DLQ, err)
	}
	total, err := o.store.Count(ctx, q)
	if err != nil {
		return p, fmt.Errorf("dlq: replay all %s: count: %w", q.DLQ, err)
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
			return p, fmt.Errorf("dlq: replay all %s: %w", q.DLQ, err)
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
			claimed, err := o.store.Transition(ctx, Transition{
				DLQ: r.DLQ, ID: r.ID, From: []Status{StatusPending}, To: StatusReplaying,
				Actor: actor, At: o.now(),
			})
			switch {
			case errors.Is(err, ErrNotPending) || errors.Is(err, ErrNotFound):
				p.Skipped++
				report()
				continue
			case err != nil:
				return finish(err)
			}
			if _, err := o.republish(ctx, claimed, actor); err != nil {
				p.Failed++
				return finish(err)
			}
			p.Replayed++
			report()
		}
		if page.Next == "" {
			return finish(nil)
		}
		q.Cursor = page.Next
	}
}

// pacer spaces events at most rate per second.
type pacer struct {
	interval time.Duration
	next     time.Time
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return &pacer{}
	}
	return &pacer{interval: time.Duration(float64(time.Second) / rate)}
}

// wait blocks until the next event may happen, ctx ends (its error) or
// stop is closed (ErrStopped).
func (p *pacer) wait(ctx context.Context, stop <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-stop:
		return ErrStopped
	default:
	}
	if p.interval <= 0 {
		return nil
	}
	now := time.Now()
	if d := p.next.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return ErrStopped
		case <-t.C:
		}
		now = p.next
	}
	p.next = now.Add(p.interval)
	return nil
}
