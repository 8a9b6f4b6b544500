package operate

import (
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"time"

	"github.com/redrive/redrive/broker"
)

// archiveBatch is how many records one Store.Archive call moves, so that no
// transaction holds many rows.
const archiveBatch = 1000

// Archive moves the records of dlq received more than olderThan ago, in any
// status but replaying, to the archive, whatever the DLQ's policy, and
// returns how many it moved. Archived records stay readable (Show, List
// with status archived) but are no longer counted as pending, replayed or
// discarded, nor replayable.
func (o *Ops) Archive(ctx context.Context, dlqName string, olderThan time.Duration) (int, error) {
	if !dlq.ValidName(dlqName) {
		return 0, fmt.Errorf("dlq: archive: %w: dlq: %q is not a DLQ name", dlq.ErrInvalidQuery, dlqName)
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("dlq: archive %s: %w: older than %s is negative", dlqName, dlq.ErrInvalidQuery, olderThan)
	}
	before := o.now().Add(-olderThan)
	total := 0
	for {
		n, err := o.store.Archive(ctx, dlqName, before, archiveBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("dlq: archive %s: %w", dlqName, err)
		}
		if n < archiveBatch {
			break
		}
	}
	if total > 0 {
		o.log.Info("dlq: archived", "dlq", dlqName, "records", total, "received_before", before)
	}
	return total, nil
}

// ArchiveExpired applies every DLQ's retention (see Policy): the records of
// each DLQ holding live records that are older than its retention go to
// the archive. DLQs of severity critical and those kept forever are
// skipped. It returns how many records it moved, by DLQ. When the store
// is a PeriodArchiver, the periods past every retention go first, whole
// (pending records archived that way are logged as a warning, by DLQ);
// the records left are moved a batch at a time.
func (o *Ops) ArchiveExpired(ctx context.Context) (map[string]int, error) {
	infos, err := o.DLQs(ctx)
	if err != nil {
		return nil, fmt.Errorf("dlq: archive expired: %w", err)
	}
	moved := map[string]int{}
	var errs []error
	if pa, ok := o.store.(dlq.PeriodArchiver); ok {
		retention := map[string]time.Duration{}
		for _, in := range infos {
			if in.Severity != string(broker.SeverityCritical) && in.Retention != broker.Forever && in.Retention > 0 {
				retention[in.DLQ] = in.Retention
			}
		}
		got, err := pa.ArchivePeriods(ctx, retention)
		for d, n := range got.Archived {
			moved[d] += n
			o.log.Info("dlq: archived a period", "dlq", d, "records", n, "pending", got.Pending[d])
		}
		for d, n := range got.Pending {
			if n > 0 {
				o.log.Warn("dlq: archived pending records past their retention (never replayed nor discarded)", "dlq", d, "records", n)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dlq: archive expired periods: %w", err))
			if ctx.Err() != nil {
				return moved, errors.Join(errs...)
			}
		}
	}
	for _, in := range infos {
		live := in.Pending + in.Replaying + in.Replayed + in.Discarded
		if live == 0 || in.Severity == string(broker.SeverityCritical) || in.Retention == broker.Forever || in.Retention <= 0 {
			continue
		}
		n, err := o.Archive(ctx, in.DLQ, in.Retention)
		if n > 0 {
			moved[in.DLQ] += n
		}
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return moved, errors.Join(errs...)
}
