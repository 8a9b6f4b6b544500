package operate

import (
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"time"
)

// replayClaimed is replayBatch on a BatchTransitioner: the entries of the
// batch are claimed (pending to replaying) a chunk at a time in one step,
// published one by one in order, each awaiting the broker's confirmation
// (send), and the chunk's replays are recorded (replaying to replayed,
// with their audit rows) in one step; the entries of the chunk not
// published (ReplayAll stopped, ctx ended, a replay failed) go back to
// pending. A chunk is what the rate allows in about a second (all of the
// batch without a rate); it ends early, its replays recorded and the rest
// claimed again, when half of ReconcileAfter passed since its claim, so
// that Reconcile never takes a claimed entry for an interrupted replay.
// A crash leaves the chunk's entries replaying, for Reconcile.
func (o *Ops) replayClaimed(ctx context.Context, bt dlq.BatchTransitioner, batch []dlq.Record, routes []dlq.Route, full map[string]dlq.Entry,
	pace *pacer, stop <-chan struct{}, actor string, p *Progress, report func()) error {
	var todo []claimedItem
	for i, r := range batch {
		if _, ok := full[r.ID]; !ok {
			p.Skipped++ // gone meanwhile
			report()
			continue
		}
		todo = append(todo, claimedItem{r, routes[i]})
	}
	chunk := len(todo)
	if pace.interval > 0 {
		chunk = max(1, int(time.Second/pace.interval))
	}
	for len(todo) > 0 {
		n := min(chunk, len(todo))
		entries := make([]dlq.BatchEntry, n)
		for i, it := range todo[:n] {
			entries[i] = dlq.BatchEntry{ID: it.r.ID}
		}
		claimedAt := time.Now()
		got, err := bt.TransitionBatch(ctx, dlq.BatchTransition{DLQ: batch[0].DLQ, From: dlq.StatusPending, To: dlq.StatusReplaying,
			Actor: actor, At: o.now(), Entries: entries})
		if err != nil {
			return fmt.Errorf("dlq: replay all: claim %d entries: %w", n, err)
		}
		claimed := make(map[string]dlq.Record, len(got))
		for _, r := range got {
			claimed[r.ID] = r
		}
		var sent, unsent []claimedItem
		var failure error
		next := n // the first item of todo not handled by this chunk
		for i, it := range todo[:n] {
			c, ok := claimed[it.r.ID]
			if !ok {
				p.Skipped++ // no longer pending
				report()
				continue
			}
			it.r = c
			if failure != nil {
				unsent = append(unsent, it)
				continue
			}
			if i > 0 && time.Since(claimedAt) > o.reconcileAfter/2 {
				// Record what was sent; claim the rest again (those
				// not claimed now are counted then). Never before the
				// chunk's first entry: the next chunk must get further.
				for _, rest := range todo[i:n] {
					if c, ok := claimed[rest.r.ID]; ok {
						rest.r = c
						unsent = append(unsent, rest)
					}
				}
				next = i
				break
			}
			if err := pace.wait(ctx, stop); err != nil {
				failure = err
				unsent = append(unsent, it)
				continue
			}
			e := full[it.r.ID]
			delete(full, it.r.ID) // its payload may go once replayed
			if err := o.send(ctx, it.r, e, it.rt, actor); err != nil {
				p.Failed++ // pending again
				failure = err
				continue
			}
			sent = append(sent, it)
			p.Replayed++ // confirmed by the broker; recorded with the chunk
			report()
		}
		if err := o.settleClaimed(ctx, bt, sent, unsent, actor, p, report); err != nil {
			return err
		}
		if failure != nil {
			return failure
		}
		todo = todo[next:] // after an early end, the rest of the chunk is claimed again
	}
	return nil
}

// claimedItem is an entry of a batch ReplayAll replays, and its route.
type claimedItem struct {
	r  dlq.Record
	rt dlq.Route
}

// settleClaimed records the replays of sent (replaying to replayed, with
// their audit rows) and sets unsent back to pending, a step each, even
// if ctx just ended. An entry it could not record stays replaying, for
// Reconcile, and is an error; it was counted replayed when the broker
// confirmed it, and is counted failed instead.
func (o *Ops) settleClaimed(ctx context.Context, bt dlq.BatchTransitioner, sent, unsent []claimedItem, actor string, p *Progress, report func()) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var errs []error
	if len(sent) > 0 {
		entries := make([]dlq.BatchEntry, len(sent))
		for i, it := range sent {
			entries[i] = dlq.BatchEntry{ID: it.r.ID, IfVersion: it.r.Version,
				Reason: dlq.AuditReason(auditTo(it.rt.Destination(it.r.Broker)))}
		}
		done, err := bt.TransitionBatch(sctx, dlq.BatchTransition{DLQ: sent[0].r.DLQ, From: dlq.StatusReplaying, To: dlq.StatusReplayed,
			Actor: actor, Action: dlq.ActionReplay, At: o.now(), Entries: entries})
		recorded := make(map[string]bool, len(done))
		for _, r := range done {
			recorded[r.ID] = true
		}
		for _, it := range sent {
			key := it.r.Key()
			if !recorded[it.r.ID] {
				o.log.Error("dlq: entry republished but not marked replayed; the reconciler will replay it again", "entry", key, "error", err)
				p.Replayed--
				p.Failed++
				report()
				continue
			}
			o.metrics.replayed(it.r.DLQ)
			o.log.Info("dlq: replayed", "entry", key, "actor", actor, "to", it.rt.Destination(it.r.Broker))
		}
		if err != nil || len(done) != len(sent) {
			errs = append(errs, fmt.Errorf("dlq: replay all: %d of %d entries republished, but recording them failed (the reconciler will replay them again): %v",
				len(sent)-len(done), len(sent), err))
		}
	}
	o.refreshSoon()
	if len(unsent) > 0 {
		entries := make([]dlq.BatchEntry, len(unsent))
		for i, it := range unsent {
			entries[i] = dlq.BatchEntry{ID: it.r.ID, IfVersion: it.r.Version}
		}
		back, err := bt.TransitionBatch(sctx, dlq.BatchTransition{DLQ: unsent[0].r.DLQ, From: dlq.StatusReplaying, To: dlq.StatusPending,
			Actor: actor, At: o.now(), Entries: entries})
		if err != nil || len(back) != len(unsent) {
			o.log.Error("dlq: replay all: claimed entries not replayed could not be set back to pending; the reconciler will replay them",
				"entries", len(unsent)-len(back), "error", err)
			errs = append(errs, fmt.Errorf("dlq: replay all: %d claimed entries not replayed could not be set back to pending (the reconciler will replay them): %v",
				len(unsent)-len(back), err))
		}
	}
	return errors.Join(errs...)
}
