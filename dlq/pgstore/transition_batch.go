package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/dlq"
)

// TransitionBatch implements dlq.BatchTransitioner in one statement: each
// entry is found by a probe of its own (a LATERAL subquery on the unique
// (dlq, id) index, in the order of the ids, so that two batches lock their
// rows in the same order), conditional on the status and its version;
// the rows found are updated by primary key, re-checking status and
// version, with the audit rows inserted by the same statement. The probe
// per id keeps the plan on the index whatever the table's statistics say:
// an UPDATE joined to the ids was planned, on a freshly loaded million, as
// a scan of the DLQ's pending entries (seconds per batch). It reads
// partition 0 and the partitions of the ids (their weeks, and the parts
// dlq_id_parts records for ids without time), named in the statement so
// that the others are pruned when it is planned.
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
	ids := make([]string, len(entries))
	versions := make([]int64, len(entries))
	reasons := make([]string, len(entries))
	for i, e := range entries {
		ids[i], versions[i], reasons[i] = e.ID, e.IfVersion, e.Reason
	}
	fail := func(err error) ([]dlq.Record, error) {
		return nil, fmt.Errorf("pgstore: transition %d entries of %q: %w", len(ids), t.DLQ, err)
	}
	recorded, err := recordedParts(ctx, s.pool, t.DLQ, ids)
	if err != nil {
		return fail(err)
	}
	parts := idsParts(ids, recorded)
	rows, err := s.pool.Query(ctx, `WITH t AS (
			SELECT * FROM unnest($2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS t(t_id, t_version, t_reason, t_ord)),
		target AS MATERIALIZED (
			SELECT e.part AS t_part, e.seq AS t_seq, e.version AS t_found, t.t_reason FROM t CROSS JOIN LATERAL (
				SELECT part, seq, version FROM dlq_entries
				WHERE dlq = $1 AND id = t.t_id AND `+parts+` AND status = $8 AND (t.t_version <= 0 OR version = t.t_version)
				LIMIT 1) e
			ORDER BY t.t_ord),
		moved AS (
			UPDATE dlq_entries SET status = $5, status_changed_at = $6, status_by = $7, version = version + 1
			FROM target
			WHERE `+parts+` AND part = t_part AND seq = t_seq AND status = $8 AND version = t_found
			RETURNING `+cols(false, brief)+`),
		audit AS (
			INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status, reason)
			SELECT $6, $7, $9::text, m.dlq, m.id, $8, $5, tg.t_reason FROM moved m JOIN target tg ON tg.t_seq = m.seq
			WHERE $9::text <> '' ORDER BY m.id)
		SELECT * FROM moved`,
		t.DLQ, ids, versions, reasons, string(t.To), at, t.Actor, string(t.From), t.Action)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	out := make([]dlq.Record, 0, len(ids))
	for rows.Next() {
		_, r, err := scanRecord(rows, brief)
		if err != nil {
			return fail(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return out, nil
}
