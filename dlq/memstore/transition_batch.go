package memstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redrive/redrive/dlq"
)

// TransitionBatch implements dlq.BatchTransitioner, entry by entry
// (Transition).
func (s *Store) TransitionBatch(ctx context.Context, t dlq.BatchTransition) ([]dlq.Record, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("memstore: transition %d entries of %q: %w", len(t.Entries), t.DLQ, err)
	}
	if t.At.IsZero() {
		t.At = s.opts.Now()
	}
	out := make([]dlq.Record, 0, len(t.Entries))
	for _, e := range t.Entries {
		r, err := s.Transition(ctx, dlq.Transition{DLQ: t.DLQ, ID: e.ID, From: []dlq.Status{t.From}, To: t.To,
			IfVersion: e.IfVersion, Actor: t.Actor, Action: t.Action, Reason: e.Reason, At: t.At})
		switch {
		case err == nil:
			out = append(out, r)
		case errors.Is(err, dlq.ErrNotPending) || errors.Is(err, dlq.ErrNotFound):
		default:
			return out, err
		}
	}
	return out, nil
}
