package operate

import (
	"context"
	"errors"
	"time"
)

// Run does Ops's background work until ctx ends, then returns nil: it
// reconciles interrupted replays at once and every ReconcileInterval
// (unless Ops has no Republisher), archives expired records every
// ArchiveInterval (the first pass at start), and refreshes the pending
// gauge every MetricsInterval and soon after each replay or discard.
// Failures are logged and retried on the next tick. Run one per process;
// several processes may run it against one store.
func (o *Ops) Run(ctx context.Context) error {
	o.reconcile(ctx)
	o.archive(ctx)
	o.refresh(ctx)
	reconcile := time.NewTicker(o.reconcileInterval)
	defer reconcile.Stop()
	archive := time.NewTicker(o.archiveInterval)
	defer archive.Stop()
	refresh := time.NewTicker(o.metricsInterval)
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reconcile.C:
			o.reconcile(ctx)
		case <-archive.C:
			o.archive(ctx)
		case <-refresh.C:
			o.refresh(ctx)
		case <-o.kick:
			o.refresh(ctx)
		}
	}
}

func (o *Ops) reconcile(ctx context.Context) {
	if o.pub == nil {
		return
	}
	n, err := o.Reconcile(ctx)
	if err != nil && ctx.Err() == nil {
		o.log.Error("dlq: reconcile", "error", err, "replayed", n)
	}
}

func (o *Ops) archive(ctx context.Context) {
	moved, err := o.ArchiveExpired(ctx)
	o.refreshSoon()
	if err != nil && !errors.Is(err, context.Canceled) {
		o.log.Error("dlq: archive expired", "error", err, "moved", moved)
	}
}

func (o *Ops) refresh(ctx context.Context) {
	if err := o.RefreshMetrics(ctx); err != nil && ctx.Err() == nil {
		o.log.Warn("dlq: refresh metrics", "error", err)
	}
}
