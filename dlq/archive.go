package dlq

import (
	"context"
	"time"
)

// PeriodArchiver is a Store that can archive whole periods of records at
// once (pgstore: a week's partition), instead of moving them a batch at a
// time. operate.Ops.ArchiveExpired uses it first when the store has it.
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

// ArchiverActor is the StatusBy of archived records.
const ArchiverActor = "redrive-archiver"
