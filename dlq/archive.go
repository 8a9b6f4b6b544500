package dlq

import (
	"context"
	"errors"
	"fmt"
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
func (o *Ops) Archive(ctx context.Context, dlq string, olderThan time.Duration) (int, error) {
	if !ValidName(dlq) {
		return 0, fmt.Errorf("dlq: archive: %w: dlq: %q is not a DLQ name", ErrInvalidQuery, dlq)
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("dlq: archive %s: %w: older than %s is negative", dlq, ErrInvalidQuery, olderThan)
	}
	before := o.now().Add(-olderThan)
	total := 0
	for {
		n, err := o.store.Archive(ctx, dlq, before, archiveBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("dlq: archive %s: %w", dlq, err)
		}
		if n < archiveBatch {
			break
		}
	}
	if total > 0 {
		o.log.Info("dlq: archived", "dlq", dlq, "records", total, "received_before", before)
	}
	return total, nil
}

// PeriodArchiver is a Store that can archive whole periods of records at
// once (pgstore: a week's partition), instead of moving them a batch at a
// time. ArchiveExpired uses it first when the store has it.
type PeriodArchiver interface {
	// ArchivePeriods archives the periods past the retention of every DLQ
	// with records in them (retention: by DLQ, the DLQs with a finite
	// retention; the others are kept forever). The records that must stay
	// live (of a DLQ absent from retention, not past their DLQ's
	// retention, or replaying) are kept live, outside the period.
	ArchivePeriods(ctx context.Context, retention map[string]time.Duration) (PeriodsArchived, error)
}

// PeriodsArchived is what PeriodArchiver.ArchivePeriods did.
type PeriodsArchived struct {
	// Partitions is how many periods went to the archive.
	Partitions int
	// Archived is how many records went to the archive, by DLQ; Pending
	// how many of them were pending (never replayed nor discarded).
	Archived, Pending map[string]int
	// Kept is how many records of those periods stayed live.
	Kept int
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
	if pa, ok := o.store.(PeriodArchiver); ok {
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

// ArchiverActor is the StatusBy of archived records.
const ArchiverActor = "redrive-archiver"
