package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// TransitionBatch implements dlq.BatchTransitioner: one statement per
// entry, sent together (one round trip) in one transaction (one commit),
// in the order of the ids (so that two batches lock their rows in the same
// order). Each is the one-statement transition of Transition: an UPDATE
// of the entry by (dlq, id), conditional on the status and version, in
// partition 0 and the entry's own (its id's week, or the part
// dlq_id_parts records for an id without time, looked up for the batch in
// one query first), with its audit row. One statement per entry rather
// than one joined to the batch's ids: its plan is the unique (dlq, id)
// index's whatever the table's statistics say (a join was planned as a
// scan of the DLQ's pending entries on a freshly loaded table: seconds
// per batch at a million).
func (s *Store) TransitionBatch(ctx context.Context, t dlq.BatchTransition) ([]dlq.Record, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(t.Entries), t.DLQ, err)
	}
	if len(t.Entries) == 0 {
		return nil, nil
	}
	at := t.At
	if at.IsZero() {
		at = s.now()
	}
	at = dlq.StoreTime(at)
	entries := slices.SortedFunc(slices.Values(t.Entries), func(a, b dlq.BatchEntry) int { return strings.Compare(a.ID, b.ID) })
	fail := func(err error) ([]dlq.Record, error) {
		return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(entries), t.DLQ, err)
	}
	parts, err := s.batchParts(ctx, t.DLQ, entries)
	if err != nil {
		return fail(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var b pgx.Batch
	for i, e := range entries {
		b.Queue(`WITH moved AS (
				UPDATE dlq_entries
				SET status = $3, status_changed_at = $4, status_by = $5, version = version + 1
				WHERE dlq = $1 AND id = $2 AND part IN (0, $10::integer) AND status = $6 AND ($7::bigint <= 0 OR version = $7::bigint)
				RETURNING `+cols(false, brief)+`),
			audit AS (
				INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status, reason)
				SELECT $4, $5, $8::text, dlq, id, $6, $3, $9 FROM moved WHERE $8::text <> '')
			SELECT * FROM moved`,
			t.DLQ, e.ID, string(t.To), at, t.Actor, string(t.From), e.IfVersion, t.Action, e.Reason, parts[i])
	}
	results := tx.SendBatch(ctx, &b)
	out := make([]dlq.Record, 0, len(entries))
	for range entries {
		_, r, err := scanRecord(results.QueryRow(), brief)
		switch {
		case err == nil:
			out = append(out, r)
		case !errors.Is(err, pgx.ErrNoRows):
			results.Close()
			return fail(err)
		}
	}
	if err := results.Close(); err != nil {
		return fail(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(err)
	}
	return out, nil
}

// batchParts returns the partition besides 0 of each entry (idPart), the
// recorded parts of the ids without time read in one query.
func (s *Store) batchParts(ctx context.Context, dlqName string, entries []dlq.BatchEntry) ([]int32, error) {
	parts := make([]int32, len(entries))
	var timeless []string
	for i, e := range entries {
		if parts[i] = idWeek(e.ID); parts[i] == 0 {
			timeless = append(timeless, e.ID)
		}
	}
	if len(timeless) == 0 {
		return parts, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, part FROM dlq_id_parts WHERE dlq = $1 AND id = ANY($2)`, dlqName, timeless)
	if err != nil {
		return nil, err
	}
	recorded := map[string]int32{}
	var id string
	var part int32
	if _, err := pgx.ForEachRow(rows, []any{&id, &part}, func() error { recorded[id] = part; return nil }); err != nil {
		return nil, err
	}
	for i, e := range entries {
		if parts[i] == 0 {
			parts[i] = recorded[e.ID]
		}
	}
	return parts, nil
}
