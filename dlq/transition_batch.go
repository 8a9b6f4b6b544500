package dlq

import (
	"context"
	"fmt"
	"time"
)

// BatchTransitioner is a Store that changes the status of several records
// of one DLQ at once. operate.Ops.ReplayAll uses it, when its store has it, to claim
// the entries of a batch in one step and to record their replays in
// another, instead of two steps per entry; the messages are still
// published one by one, each confirmed by the broker before it counts.
// pgstore and memstore implement it.
type BatchTransitioner interface {
	// TransitionBatch makes t's change to each of t.Entries as Transition
	// would (in one transaction, with an audit row per entry changed when
	// t.Action is set) and returns the records it changed, Brief, in no
	// particular order. An entry not in status t.From (or not of its
	// IfVersion), unknown or archived is left as it is and not returned:
	// that is not an error. An error means nothing changed.
	TransitionBatch(ctx context.Context, t BatchTransition) ([]Record, error)
}

// BatchTransition is one status change of several records of a DLQ, for
// BatchTransitioner.TransitionBatch.
type BatchTransition struct {
	DLQ string
	// From is the status the records must be in; To the new one (neither
	// StatusArchived).
	From, To Status
	// Actor, Action and At are those of Transition, the same for every
	// record.
	Actor  string
	Action string
	At     time.Time
	// Entries are the records, each at most once.
	Entries []BatchEntry
}

// BatchEntry is one record of a BatchTransition: its id, the version it
// must have (when positive) and the reason of its audit row.
type BatchEntry struct {
	ID        string
	IfVersion int64
	Reason    string
}

// MaxBatchTransition bounds BatchTransition.Entries.
const MaxBatchTransition = MaxLimit

// Validate reports the first problem of t, naming the field, wrapped in
// ErrInvalidQuery.
func (t BatchTransition) Validate() error {
	switch {
	case !ValidName(t.DLQ):
		return fmt.Errorf("%w: dlq: %q is not a DLQ name", ErrInvalidQuery, t.DLQ)
	case !t.From.Valid() || t.From == StatusArchived:
		return fmt.Errorf("%w: from: %q is not a status a record can leave", ErrInvalidQuery, t.From)
	case !t.To.Valid() || t.To == StatusArchived:
		return fmt.Errorf("%w: to: %q is not a status a record can get", ErrInvalidQuery, t.To)
	case len(t.Entries) > MaxBatchTransition:
		return fmt.Errorf("%w: entries: %d, at most %d", ErrInvalidQuery, len(t.Entries), MaxBatchTransition)
	}
	seen := make(map[string]bool, len(t.Entries))
	for _, e := range t.Entries {
		if seen[e.ID] {
			return fmt.Errorf("%w: entries: %q twice", ErrInvalidQuery, e.ID)
		}
		seen[e.ID] = true
	}
	return nil
}
