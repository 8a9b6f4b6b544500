package jobs

import (
	"context"
	"errors"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"sync"
	"time"
)

// storeTimeout bounds the job store writes made after Close (the hand-over
// or the end of a job).
const storeTimeout = 10 * time.Second

// runJob runs job st to its end and records it, renewing its lease every
// Lease/3 and checkpointing after each page. A cancel asked for on any
// replica stops it at its next renewal or checkpoint; a lost lease (the
// job taken over elsewhere) stops it without recording anything.
func (js *Jobs) runJob(st dlq.JobState, r *run, resume bool) {
	q := dlq.Query{DLQ: st.DLQ, Status: dlq.StatusPending, ErrorClass: st.Filter.ErrorClass, Text: st.Filter.Text, Group: st.Filter.Group, Until: st.Until}
	if st.Filter.Since != nil {
		q.Since = *st.Filter.Since
	}
	var (
		mu    sync.Mutex // guards saved: the renewer and the checkpoints write it
		saved = st
		lost  bool
	)
	// save writes the saved state with a new lease and reads back
	// whether a cancel was asked for.
	save := func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if lost {
			return dlq.ErrLeaseLost
		}
		lease := time.Now().UTC().Add(js.lease)
		saved.LeaseExpires = &lease
		got, err := js.store.SaveJob(ctx, saved)
		if errors.Is(err, dlq.ErrLeaseLost) {
			lost = true
			r.halt()
			return err
		}
		if err != nil {
			return err
		}
		if got.CancelledBy != "" {
			saved.CancelledBy, saved.CancelledAt = got.CancelledBy, got.CancelledAt
			r.halt()
		}
		return nil
	}
	renewed := make(chan struct{})
	rctx, stopRenew := context.WithCancel(js.ctx)
	go func() {
		defer close(renewed)
		tick := time.NewTicker(js.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				if err := save(rctx); err != nil && rctx.Err() == nil && !errors.Is(err, dlq.ErrLeaseLost) {
					js.log.Warn("dlq: renew the lease of a replay-all job", "job", st.ID, "error", err)
				}
			}
		}
	}()
	opts := operate.ReplayAllOptions{
		Actor: st.Actor, Rate: st.Rate, Stop: r.stop,
		Progress: func(p operate.Progress) {
			r.mu.Lock()
			r.live = progressOf(st.Kind, p)
			r.mu.Unlock()
		},
		Checkpoint: func(p operate.Progress, cursor string) error {
			mu.Lock()
			saved.Progress, saved.Cursor = progressOf(st.Kind, p), cursor
			mu.Unlock()
			if err := save(js.ctx); errors.Is(err, dlq.ErrLeaseLost) || js.ctx.Err() != nil {
				return err
			} else if err != nil {
				js.log.Warn("dlq: checkpoint a replay-all job; the lease renewal retries", "job", st.ID, "error", err)
			}
			return nil
		},
	}
	if resume {
		opts.Resume = &operate.ReplayAllResume{Cursor: st.Cursor, Progress: checkpoint(st.Progress), Started: st.StartedAt}
	}
	if st.CancelledBy != "" {
		r.halt() // taken over after a cancel its dead owner never saw: stop before the first entry
	}
	var (
		p   operate.Progress
		err error
	)
	if st.Kind == dlq.JobDiscardAll {
		// Not checkpointed: a discard-all taken over discards what is
		// still pending, and counts that.
		p, err = js.ops.DiscardAll(js.ctx, q, operate.DiscardAllOptions{Actor: st.Actor, Reason: st.Reason, Rate: st.Rate, Stop: r.stop,
			Progress: opts.Progress})
	} else {
		p, err = js.ops.ReplayAll(js.ctx, q, opts)
	}
	stopRenew()
	<-renewed

	mu.Lock()
	defer mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(js.ctx), storeTimeout)
	defer cancel()
	switch {
	case lost || errors.Is(err, dlq.ErrLeaseLost):
		js.log.Warn("dlq: replay-all job stopped here: another replica took it over", "job", st.ID, "replica", js.replica)
		return
	case err != nil && js.shared && js.ctx.Err() != nil && saved.CancelledBy == "":
		// Handed over: the checkpoint stays, the lease expires now.
		now := time.Now().UTC()
		saved.LeaseExpires = &now
		if _, err := js.store.SaveJob(ctx, saved); err != nil {
			js.log.Warn("dlq: hand over a replay-all job; another replica takes it over when its lease expires", "job", st.ID, "error", err)
		} else {
			js.log.Info("dlq: replay-all job handed over", "job", st.ID, "replayed", p.Replayed)
		}
		return
	}
	now := time.Now().UTC()
	end := saved
	end.Progress, end.FinishedAt = progressOf(st.Kind, p), &now
	switch {
	case err == nil:
		end.State = dlq.JobDone
	case errors.Is(err, operate.ErrStopped):
		if cur, gerr := js.store.GetJob(ctx, st.ID); gerr == nil && cur.CancelledBy != "" {
			end.CancelledBy, end.CancelledAt = cur.CancelledBy, cur.CancelledAt
		}
		end.State, end.Error = dlq.JobCancelled, "cancelled by "+end.CancelledBy
	case errors.Is(err, context.Canceled):
		end.State, end.Error = dlq.JobCancelled, "the server shut down"
	default:
		end.State, end.Error = dlq.JobFailed, err.Error()
	}
	if ferr := js.store.FinishJob(ctx, end, js.max); ferr != nil {
		js.log.Error("dlq: record the end of a replay-all job", "job", st.ID, "error", ferr)
	}
	js.log.Info("dlq: replay-all finished", "job", st.ID, "dlq", st.DLQ, "state", end.State, "replayed", p.Replayed,
		"mismatched", p.Mismatched, "duplicates", p.Duplicates, "error", err)
}
