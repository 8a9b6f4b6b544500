package operate

import (
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"slices"
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
	// PageSize is how many records are listed at a time (without their
	// messages); default 100, at most MaxLimit.
	PageSize int
	// BatchBytes bounds the payload bytes read from the store at a time:
	// the messages of a page are read in batches of at most this many
	// bytes of payload (a larger entry alone). Default DefaultBatchBytes.
	BatchBytes int64
	// Resume, when set, continues an interrupted run (a replay-all job
	// taken over by another replica) instead of starting one; see
	// ReplayAllResume.
	Resume *ReplayAllResume
	// Checkpoint, when set, is called once the entries are counted (with
	// an empty cursor) and after each page with the progress and the
	// cursor after that page: a run resumed from them (Resume) replays
	// what follows. An error stops ReplayAll with it.
	Checkpoint func(p Progress, cursor string) error
}

// ReplayAllResume is where an interrupted ReplayAll resumes: the cursor and
// progress of its last checkpoint. The entries of the page it was in when
// it stopped that are no longer pending (replaying or replayed since
// Started) were handled by the interrupted run after its checkpoint: they
// are not replayed again but counted in Progress.Duplicates.
type ReplayAllResume struct {
	// Cursor is the checkpoint's cursor; empty = from the start.
	Cursor string
	// Progress is the checkpoint's progress (its Total is kept).
	Progress Progress
	// Started is when the interrupted run started: entries changed
	// before it were not handled by it.
	Started time.Time
}

// DefaultBatchBytes is the default of ReplayAllOptions.BatchBytes: a page
// of small entries is read at once, an entry of 8 MiB or more alone.
const DefaultBatchBytes = 8 << 20

// Progress is how far a ReplayAll has come.
type Progress struct {
	// Total is how many pending entries the filter selected at the start.
	Total int64
	// Replayed entries are replayed; Skipped ones were no longer pending
	// when their turn came; Failed ones were refused by the broker (pending
	// again); Mismatched ones were not replayed because their recorded
	// origin disagrees with their DLQ's route, or the DLQ has none (see
	// Ops.Target), or their original message is unknown
	// (ErrUnknownMessage: only Ops.ReplayAsStored sends one): they stay
	// pending.
	Replayed   int64
	Skipped    int64
	Failed     int64
	Mismatched int64
	// Duplicates were handled by an interrupted run after its last
	// checkpoint (see ReplayAllResume): not replayed again by this one.
	Duplicates int64
	// Done is set on the last report.
	Done bool
}

// ReplayAll replays the pending entries of q.DLQ that q selects (ErrorClass,
// Text, Since, Until; q.Status must be empty or pending), oldest first, one
// by one with the steps and audit rows of Replay, at most opts.Rate per
// second. On a store that is a BatchTransitioner, the store's steps are
// taken for a chunk of entries at once (claimed, then recorded): each
// message is still published alone and counted once its broker confirmed
// it, and a crash leaves at most a chunk replaying, for Reconcile. Entries
// whose origin disagrees with their route (Ops.Target), and entries whose
// original message is unknown (ErrUnknownMessage), are skipped, counted in
// Progress.Mismatched and left pending. It lists the
// store a page at a time without payloads and reads the payloads in
// batches bounded by bytes (opts.BatchBytes), so memory stays bounded
// whatever the entries' number and size.
// Entries received after it started are left alone, so that a replayed
// message that fails again is not replayed in a loop. It stops at the
// first failed replay (that entry is pending again) or when ctx ends, and
// returns the progress with the error; running it again resumes, since
// replayed entries are no longer pending.
func (o *Ops) ReplayAll(ctx context.Context, q dlq.Query, opts ReplayAllOptions) (Progress, error) {
	if o.pub == nil {
		return Progress{}, ErrNoRepublisher
	}
	b, err := newBulk("replay all", q, opts.Rate, opts.PageSize, o.now(), opts.Progress)
	if err != nil {
		return Progress{}, err
	}
	if opts.Resume != nil {
		if err := o.resumeBulk(ctx, b, opts.Resume); err != nil {
			return b.p, err
		}
	} else if err := b.count(ctx, o.store); err != nil {
		return b.p, err
	}
	b.report()
	if opts.Checkpoint != nil && opts.Resume == nil {
		if err := opts.Checkpoint(b.p, ""); err != nil { // the total, at once
			return b.finish(err)
		}
	}

	batchBytes := opts.BatchBytes
	if batchBytes <= 0 {
		batchBytes = DefaultBatchBytes
	}
	pace := newPacer(opts.Rate)
	actor := dlq.AuditActor(opts.Actor)
	return b.run(ctx, o.store, func(recs []dlq.Record) error {
		for len(recs) > 0 {
			// The next batch: routable entries up to batchBytes of payload.
			var batch []dlq.Record
			var routes []dlq.Route
			var size int64
			for len(recs) > 0 && (len(batch) == 0 || size+recs[0].ValueSize <= batchBytes) {
				r := recs[0]
				recs = recs[1:]
				rt, err := o.refusal(r, false)
				if err != nil {
					b.p.Mismatched++
					o.log.Warn("dlq: replay all: entry left pending", "entry", r.Key(), "error", err)
					b.report()
					continue
				}
				batch, routes = append(batch, r), append(routes, rt)
				size += r.ValueSize
			}
			if len(batch) == 0 {
				continue
			}
			if err := o.replayBatch(ctx, batch, routes, pace, opts.Stop, actor, &b.p, b.report); err != nil {
				return err
			}
		}
		return nil
	}, opts.Checkpoint)
}

// resumeBulk sets b up to continue the interrupted run res describes: its
// cursor and progress, plus the entries that run handled after its
// checkpoint counted as duplicates.
func (o *Ops) resumeBulk(ctx context.Context, b *bulk, res *ReplayAllResume) error {
	b.p = res.Progress
	b.p.Done = false
	b.q.Cursor = res.Cursor
	if err := b.q.Validate(); err != nil {
		return b.errorf("resume: %w", err)
	}
	dups, err := o.handledAfter(ctx, b.q, res.Started)
	if err != nil {
		return b.errorf("resume: %w", err)
	}
	b.p.Duplicates += dups
	if b.p.Total == 0 && res.Cursor == "" {
		// Interrupted before its first checkpoint recorded the total.
		pending, err := o.store.Count(ctx, b.q)
		if err != nil {
			return b.errorf("count: %w", err)
		}
		b.p.Total = pending + dups
	}
	return nil
}

// handledAfter counts the entries an interrupted run handled after its
// checkpoint: q's cursor is the checkpoint's, and that run was in the page
// of the next q.Limit entries that were pending then. They are those
// entries (of q's filter, any status) now replaying or replayed by a
// change at or after started; the scan stops after q.Limit entries that
// are pending or so changed.
func (o *Ops) handledAfter(ctx context.Context, q dlq.Query, started time.Time) (int64, error) {
	q.Status = ""
	var seen, dups int64
	for {
		page, err := o.store.List(ctx, q)
		if err != nil {
			return dups, err
		}
		for _, r := range page.Records {
			touched := (r.Status == dlq.StatusReplaying || r.Status == dlq.StatusReplayed) && !r.StatusChangedAt.Before(started)
			if touched {
				dups++
			}
			if touched || r.Status == dlq.StatusPending {
				if seen++; seen >= int64(q.Limit) {
					return dups, nil
				}
			}
		}
		if page.Next == "" {
			return dups, nil
		}
		q.Cursor = page.Next
	}
}

// replayBatch reads the messages of batch (Brief records of one DLQ) and
// replays them one by one to their routes: on a BatchTransitioner with
// the store's steps taken a chunk at a time (replayClaimed), else entry by
// entry.
func (o *Ops) replayBatch(ctx context.Context, batch []dlq.Record, routes []dlq.Route, pace *pacer, stop <-chan struct{}, actor string, p *Progress, report func()) error {
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.ID
	}
	full, err := o.store.GetMany(ctx, batch[0].DLQ, ids)
	if err != nil {
		return err
	}
	batch, routes = o.resolveBatch(batch, routes, full, p, report)
	if len(batch) == 0 {
		return nil
	}
	if bt, ok := o.store.(dlq.BatchTransitioner); ok {
		entries := make(map[string]dlq.Entry, len(full))
		for _, r := range full {
			entries[r.ID] = r.Entry
		}
		return o.replayClaimed(ctx, bt, batch, routes, entries, pace, stop, actor, p, report)
	}
	index := make(map[string]int, len(full))
	for i := range full {
		index[full[i].ID] = i
	}
	for i, r := range batch {
		if err := pace.wait(ctx, stop); err != nil {
			return err
		}
		j, ok := index[r.ID]
		if !ok {
			p.Skipped++ // gone meanwhile
			report()
			continue
		}
		e := full[j].Entry
		full[j] = dlq.Record{} // its payload may go once replayed
		claimed, err := o.store.Transition(ctx, dlq.Transition{
			DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying,
			Actor: actor, At: o.now(),
		})
		switch {
		case errors.Is(err, dlq.ErrNotPending) || errors.Is(err, dlq.ErrNotFound):
			p.Skipped++
			report()
			continue
		case err != nil:
			return err
		}
		_, err = o.republish(ctx, claimed, e, routes[i], actor)
		if err != nil {
			p.Failed++
			return err
		}
		p.Replayed++
		report()
	}
	return nil
}

// resolveBatch resolves the routes of batch that a listing left
// unresolved (Route.Resolve: an x-death route) from the entries read
// whole (full), leaving out, counted Mismatched, those it refuses.
func (o *Ops) resolveBatch(batch []dlq.Record, routes []dlq.Route, full []dlq.Record, p *Progress, report func()) ([]dlq.Record, []dlq.Route) {
	if !slices.ContainsFunc(routes, func(rt dlq.Route) bool { return !rt.Resolved() }) {
		return batch, routes
	}
	byID := make(map[string]dlq.Entry, len(full))
	for _, r := range full {
		byID[r.ID] = r.Entry
	}
	keptB, keptR := batch[:0:0], routes[:0:0]
	for i, r := range batch {
		rt := routes[i]
		if e, ok := byID[r.ID]; ok && !rt.Resolved() {
			var err error
			if rt, err = resolve(rt, e); err != nil {
				p.Mismatched++
				o.log.Warn("dlq: replay all: entry left pending", "entry", r.Key(), "error", err)
				report()
				continue
			}
		}
		keptB, keptR = append(keptB, r), append(keptR, rt)
	}
	return keptB, keptR
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
