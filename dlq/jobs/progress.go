package jobs

import (
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// progressOf is a job's view of p.
func progressOf(kind string, p operate.Progress) dlq.JobProgress {
	if kind == dlq.JobDiscardAll {
		return dlq.JobProgress{Total: p.Total, Discarded: p.Replayed, Skipped: p.Skipped, Failed: p.Failed}
	}
	return dlq.JobProgress{Total: p.Total, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed, Mismatched: p.Mismatched, Duplicates: p.Duplicates}
}

// checkpoint is the Progress of a replay-all job's counts.
func checkpoint(p dlq.JobProgress) operate.Progress {
	return operate.Progress{Total: p.Total, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed, Mismatched: p.Mismatched, Duplicates: p.Duplicates}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
