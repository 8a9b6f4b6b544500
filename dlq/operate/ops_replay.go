package operate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"strings"
	"time"

	"github.com/redrive/redrive/broker/driver"
)

// settleTimeout bounds recording the outcome of a replay once the broker
// answered, even when the caller's context has ended.
const settleTimeout = 15 * time.Second

// Replay republishes entry id of dlq to the target of its route (Target:
// the configured worker of the DLQ it sits in, never a place the entry
// names) and marks it replayed, with an audit row by actor, in three steps:
// the entry is marked replaying (the intent, in a transaction), the
// Republisher is called, then the entry is marked replayed with its audit
// row (in a transaction). When the broker refuses or does not confirm, the
// entry goes back to pending with a replay_failed audit row (the
// unconfirmed message may still have arrived). A crash between the steps
// leaves the entry replaying, for Reconcile.
//
// An entry that is not pending is ErrNotPending; an unknown one
// ErrNotFound; one whose recorded origin disagrees with its route
// ErrOriginMismatch, and one of a DLQ no worker is configured for
// ErrNoRoute; one whose original message is unknown (stored raw, reason
// unparseable) ErrUnknownMessage, since a replay never invents a message
// (ReplayAsStored sends its stored bytes when the operator says so). Each
// leaves it pending, untouched. The record returned is whole.
func (o *Ops) Replay(ctx context.Context, dlqName, id, actor string) (dlq.Record, error) {
	return o.replay(ctx, dlqName, id, actor, false)
}

// ReplayAsStored is Replay for an operator who explicitly asks to send an
// entry's stored bytes as they are: an entry whose original message is
// unknown (UnknownMessage) is replayed too, its stored key, value and
// headers sent to its route as they are, and its audit row's action is
// ActionReplayAsStored, saying so. Any other entry is replayed as Replay
// does (its stored bytes are its message).
func (o *Ops) ReplayAsStored(ctx context.Context, dlqName, id, actor string) (dlq.Record, error) {
	return o.replay(ctx, dlqName, id, actor, true)
}

// ErrUnknownMessage is wrapped by Replay (HTTP 409) for an entry whose
// original message is unknown: the keeper could not decode what it read
// and stored it raw (reason unparseable), so its stored bytes are the
// dead-letter record, not the message the worker failed on; or the broker
// client could not decode the message's headers (reason undecodable), so
// the entry keeps their refused bytes, not the headers. ReplayAll skips
// such entries (Progress.Mismatched). ReplayAsStored sends them.
var ErrUnknownMessage = errors.New("the original message is unknown (the entry was stored raw, or its headers could not be decoded)")

// UnknownMessage reports whether r's original message is unknown: its
// entry was stored raw (reason unparseable), or its headers could not be
// decoded (reason undecodable). Replay refuses it (ErrUnknownMessage);
// ReplayAsStored sends its stored bytes as they are (an undecodable one:
// its body and properties, without headers).
func UnknownMessage(r dlq.Record) bool { return unknown(r.Entry) }

// unknown reports whether e's original message is unknown: stored raw,
// or its headers refused by the broker client.
func unknown(e dlq.Entry) bool {
	return e.Reason == string(dlq.ReasonUnparseable) || e.Reason == string(driver.ReasonUndecodable)
}

// ReplayRoute returns the route a Replay of r takes, or the error Replay
// would refuse it with: Target's (ErrOriginMismatch, ErrNoRoute), or
// ErrUnknownMessage, returned with the route ReplayAsStored would take.
// Listings show it beside each entry.
func (o *Ops) ReplayRoute(r dlq.Record) (dlq.Route, error) { return o.refusal(r, false) }

// refusal is ReplayRoute, allowing an unknown message when asStored.
func (o *Ops) refusal(r dlq.Record, asStored bool) (dlq.Route, error) {
	rt, err := o.Target(r)
	if err != nil {
		return dlq.Route{}, err
	}
	if UnknownMessage(r) && !asStored {
		return rt, fmt.Errorf("%w: %s; replay it as stored to send its stored bytes as they are to %s",
			ErrUnknownMessage, clipName(r.Entry.ErrorMessage), rt.Destination(r.Broker))
	}
	return rt, nil
}

func (o *Ops) replay(ctx context.Context, dlqName, id, actor string, asStored bool) (dlq.Record, error) {
	if o.pub == nil {
		return dlq.Record{}, ErrNoRepublisher
	}
	actor = dlq.AuditActor(actor)
	full, err := o.store.Get(ctx, dlqName, id)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("dlq: replay %s: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	if full.Status != dlq.StatusPending {
		return dlq.Record{}, fmt.Errorf("dlq: replay %s: %w: it is %s", dlq.ReplayedFrom(dlqName, id), dlq.ErrNotPending, full.Status)
	}
	rt, err := o.refusal(full, asStored)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("dlq: replay %s: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	r, err := o.store.Transition(ctx, dlq.Transition{
		DLQ: dlqName, ID: id, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying,
		Actor: actor, At: o.now(),
	})
	if err != nil {
		return dlq.Record{}, fmt.Errorf("dlq: replay %s: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	done, err := o.republish(ctx, r, full.Entry, rt, actor)
	if err != nil {
		return dlq.Record{}, err
	}
	// Whole, so that its route reads as it was taken (an x-death route
	// resolves from the entry).
	done.Entry, done.Brief = full.Entry, false
	return done, nil
}

// republish calls the Republisher for r, which is replaying, with its
// whole entry e (read by Store.Get: r itself is Brief) and its route rt,
// and records the outcome; the audit row names where the replay went
// (Destination).
func (o *Ops) republish(ctx context.Context, r dlq.Record, e dlq.Entry, rt dlq.Route, actor string) (dlq.Record, error) {
	if err := o.send(ctx, r, e, rt, actor); err != nil {
		return dlq.Record{}, err
	}
	key := r.Key()
	dest := rt.Destination(r.Broker)
	action, reason := replayAudit(e, dest)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	done, err := o.store.Transition(sctx, dlq.Transition{
		DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed, IfVersion: r.Version,
		Actor: actor, Action: action, Reason: dlq.AuditReason(reason), At: o.now(),
	})
	if err != nil {
		o.log.Error("dlq: entry republished but not marked replayed; the reconciler will replay it again",
			"entry", key, "error", err)
		return dlq.Record{}, fmt.Errorf("dlq: replay %s: republished, but recording it failed (the reconciler will replay it again): %w", key, err)
	}
	o.metrics.replayed(r.DLQ)
	o.refreshSoon()
	o.log.Info("dlq: replayed", "entry", key, "actor", actor, "to", dest, "action", action)
	return done, nil
}

// replayAudit is the action and reason of the audit row of a replay of e
// to dest: ActionReplay "to <dest>", or, for an entry whose message is
// unknown (only ReplayAsStored sends one), ActionReplayAsStored saying its
// stored bytes were sent as they are.
func replayAudit(e dlq.Entry, dest string) (action, reason string) {
	if unknown(e) {
		return dlq.ActionReplayAsStored, auditTo(dest) + ": as stored: the original message is unknown (the entry was stored raw); its stored bytes were sent as they are"
	}
	return dlq.ActionReplay, auditTo(dest)
}

// send calls the Republisher for r, which is replaying, with its whole
// entry e and its route rt. When the broker refuses or does not confirm,
// r goes back to pending with a replay_failed audit row (recorded even
// if ctx just ended) and the error wraps ErrReplayFailed.
func (o *Ops) send(ctx context.Context, r dlq.Record, e dlq.Entry, rt dlq.Route, actor string) error {
	key := r.Key()
	pctx, cancel := context.WithTimeout(ctx, o.replayTimeout)
	err := o.pub.Republish(pctx, e, rt, key)
	cancel()
	if err == nil {
		return nil
	}
	// The broker has answered: record the outcome even if ctx just ended.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	_, terr := o.store.Transition(sctx, dlq.Transition{
		DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusPending, IfVersion: r.Version,
		Actor: actor, Action: dlq.ActionReplayFailed, Reason: dlq.AuditReason(auditTo(rt.Destination(r.Broker)) + ": " + err.Error()), At: o.now(),
	})
	if terr != nil {
		o.log.Error("dlq: replay failed and the entry could not be set back to pending; the reconciler will replay it",
			"entry", key, "error", err, "store_error", terr)
	}
	return fmt.Errorf("dlq: replay %s: %w: %w", key, ErrReplayFailed, err)
}

// auditTo is the reason of a replay's audit row: where it went.
func auditTo(dest string) string {
	if dest == "" {
		return "to its source"
	}
	return "to " + dest
}

// Discard gives up on entry id of dlq: it becomes discarded, with an audit
// row by actor giving reason, in one transaction. An empty reason is
// ErrReasonRequired; an entry that is not pending ErrNotPending; an unknown
// one ErrNotFound.
func (o *Ops) Discard(ctx context.Context, dlqName, id, actor, reason string) (dlq.Record, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return dlq.Record{}, fmt.Errorf("dlq: discard %s: %w", dlq.ReplayedFrom(dlqName, id), ErrReasonRequired)
	}
	actor = dlq.AuditActor(actor)
	r, err := o.store.Transition(ctx, dlq.Transition{
		DLQ: dlqName, ID: id, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded,
		Actor: actor, Action: dlq.ActionDiscard, Reason: dlq.AuditReason(reason), At: o.now(),
	})
	if err != nil {
		return dlq.Record{}, fmt.Errorf("dlq: discard %s: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	o.refreshSoon()
	o.log.Info("dlq: discarded", "entry", r.Key(), "actor", actor, "reason", reason)
	return r, nil
}

// Reconcile finishes replays interrupted by a crash: every entry that has
// been replaying for longer than ReconcileAfter is claimed (so that two
// instances never take the same one), republished, and marked replayed
// with an audit row of action reconcile saying that the message may have
// been delivered twice. Delivery stays at least once: an entry is never
// lost, and never replayed twice without an audit row saying so. Entries
// whose replay fails again stay replaying for the next pass. Call it at
// start (Run does, then periodically). It returns how many entries it
// replayed.
func (o *Ops) Reconcile(ctx context.Context) (int, error) {
	if o.pub == nil {
		return 0, ErrNoRepublisher
	}
	cutoff := o.now().Add(-o.reconcileAfter)
	q := dlq.Query{Status: dlq.StatusReplaying, Limit: 100}
	var (
		n    int
		errs []error
	)
	for {
		page, err := o.store.List(ctx, q)
		if err != nil {
			return n, fmt.Errorf("dlq: reconcile: %w", err)
		}
		for _, r := range page.Records {
			if r.StatusChangedAt.After(cutoff) {
				continue // a replay in progress, maybe in another instance
			}
			ok, err := o.reconcileOne(ctx, r)
			if err != nil {
				errs = append(errs, err)
				if ctx.Err() != nil {
					return n, fmt.Errorf("dlq: reconcile: %w", errors.Join(errs...))
				}
				continue
			}
			if ok {
				n++
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("dlq: reconcile: %d entries still replaying: %w", len(errs), errors.Join(errs...))
	}
	return n, nil
}

// reconcileOne claims r and replays it; false when another instance
// claimed it first. An entry whose route no longer agrees (the
// configuration changed meanwhile) goes back to pending with a
// replay_failed audit row saying why.
func (o *Ops) reconcileOne(ctx context.Context, r dlq.Record) (bool, error) {
	rt, terr := o.Target(r)
	if terr == nil && !rt.Resolved() {
		// An x-death route: its target is in the entry's stored form.
		full, err := o.store.Get(ctx, r.DLQ, r.ID)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", r.Key(), err)
		}
		rt, terr = o.Target(full)
	}
	if terr != nil {
		_, err := o.store.Transition(ctx, dlq.Transition{
			DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusPending, IfVersion: r.Version,
			Actor: dlq.ReconcileActor, Action: dlq.ActionReplayFailed, Reason: dlq.AuditReason(terr.Error()), At: o.now(),
		})
		if errors.Is(err, dlq.ErrNotPending) || errors.Is(err, dlq.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("set %s back to pending: %w", r.Key(), err)
		}
		o.log.Warn("dlq: reconcile: an interrupted replay has no route any more; the entry is pending again", "entry", r.Key(), "error", terr)
		return false, nil
	}
	claimed, err := o.store.Transition(ctx, dlq.Transition{
		DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplaying, IfVersion: r.Version,
		Actor: dlq.ReconcileActor, At: o.now(),
	})
	if errors.Is(err, dlq.ErrNotPending) || errors.Is(err, dlq.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", r.Key(), err)
	}
	key := r.Key()
	full, err := o.store.Get(ctx, r.DLQ, r.ID)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	pctx, cancel := context.WithTimeout(ctx, o.replayTimeout)
	err = o.pub.Republish(pctx, full.Entry, rt, key)
	cancel()
	if err != nil {
		o.log.Warn("dlq: reconcile: replay failed again; the entry stays replaying", "entry", key, "error", err)
		return false, fmt.Errorf("replay %s: %w: %w", key, ErrReplayFailed, err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	reason := fmt.Sprintf("%s: replay by %s at %s was interrupted before it was recorded; replayed again: the message may have been delivered twice",
		auditTo(rt.Destination(r.Broker)), cmp.Or(r.StatusBy, "unknown"), r.StatusChangedAt.UTC().Format(time.RFC3339))
	if _, err := o.store.Transition(sctx, dlq.Transition{
		DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed, IfVersion: claimed.Version,
		Actor: dlq.ReconcileActor, Action: dlq.ActionReconcile, Reason: reason, At: o.now(),
	}); err != nil {
		return false, fmt.Errorf("record replay of %s: %w", key, err)
	}
	o.metrics.replayed(r.DLQ)
	o.log.Warn("dlq: reconciled an interrupted replay (possible duplicate)", "entry", key, "requested_by", r.StatusBy)
	return true, nil
}
