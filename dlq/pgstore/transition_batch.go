package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/dlq"
)

// TransitionBatch implements dlq.BatchTransitioner in one statement: an
// UPDATE joined to the entries' ids (sorted, so that two batches lock
// their rows in the same order), conditional on the status and each
// entry's version, with the audit rows inserted by the same statement. It
// reads partition 0 and the partitions of the ids (their weeks, and the
// parts dlq_id_parts records for ids without time), named in the
// statement so that the others are pruned when it is planned.
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
	entries := slices.SortedFunc(slices.Values(t.Entries), func(a, b dlq.BatchEntry) int {
		return strings.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(entries))
	versions := make([]int64, len(entries))
	reasons := make([]string, len(entries))
	for i, e := range entries {
		ids[i], versions[i], reasons[i] = e.ID, e.IfVersion, e.Reason
	}
	recorded, err := recordedParts(ctx, s.pool, t.DLQ, ids)
	if err != nil {
		return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(ids), t.DLQ, err)
	}
	rows, err := s.pool.Query(ctx, `WITH t AS (
			SELECT * FROM unnest($2::text[], $3::bigint[], $4::text[]) AS t(t_id, t_version, t_reason)),
		moved AS (
			UPDATE dlq_entries SET status = $5, status_changed_at = $6, status_by = $7, version = version + 1
			FROM t
			WHERE dlq = $1 AND id = t_id AND `+idsParts(ids, recorded)+` AND status = $8 AND (t_version <= 0 OR version = t_version)
			RETURNING `+cols(false, brief)+`),
		audit AS (
			INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status, reason)
			SELECT $6, $7, $9::text, m.dlq, m.id, $8, $5, t.t_reason FROM moved m JOIN t ON t.t_id = m.id
			WHERE $9::text <> '' ORDER BY m.id)
		SELECT * FROM moved`,
		t.DLQ, ids, versions, reasons, string(t.To), at, t.Actor, string(t.From), t.Action)
	if err != nil {
		return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(ids), t.DLQ, err)
	}
	defer rows.Close()
	out := make([]dlq.Record, 0, len(ids))
	for rows.Next() {
		_, r, err := scanRecord(rows, brief)
		if err != nil {
			return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(ids), t.DLQ, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(ids), t.DLQ, err)
	}
	return out, nil
}
