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

// ArchiveExpired applies every DLQ's retention (see Policy): the records of
// each DLQ holding live records that are older than its retention go to
// the archive. DLQs of severity critical and those kept forever are
// skipped. It returns how many records it moved, by DLQ.
func (o *Ops) ArchiveExpired(ctx context.Context) (map[string]int, error) {
	infos, err := o.DLQs(ctx)
	if err != nil {
		return nil, fmt.Errorf("dlq: archive expired: %w", err)
	}
	moved := map[string]int{}
	var errs []error
	for _, in := range infos {
		live := in.Pending + in.Replaying + in.Replayed + in.Discarded
		if live == 0 || in.Severity == string(broker.SeverityCritical) || in.Retention == broker.Forever || in.Retention <= 0 {
			continue
		}
		n, err := o.Archive(ctx, in.DLQ, in.Retention)
		if n > 0 {
			moved[in.DLQ] = n
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
