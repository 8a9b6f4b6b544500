package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// Transition implements dlq.Store. A transition from one status (every
// one Ops makes) is tried first in one statement, one round trip: an UPDATE
// conditional on the status (and version), which PostgreSQL re-checks on
// the row's newest version after waiting for its lock, with the audit row
// inserted by the same statement. When it changes nothing (the record is
// missing, archived, in another status or version), or the transition
// allows several statuses, the transition is made in one transaction in
// which the record is locked (SELECT … FOR UPDATE), checked, updated and
// the audit row inserted, which also tells why it was refused. The one
// statement reads the partition where the store puts the record (its id's
// week, or the part dlq_id_parts records for an id without time, read
// first, or 0: see partitions.go); the transaction reads both partitions the record may be
// in (0 and that one: a record stored before schema version 6, or 7 for
// an id without time, or kept live when its week was archived, is in 0).
func (s *Store) Transition(ctx context.Context, t dlq.Transition) (dlq.Record, error) {
	name := dlq.ReplayedFrom(t.DLQ, t.ID)
	if !t.To.Valid() || t.To == dlq.StatusArchived {
		return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: invalid target status %q", name, t.To)
	}
	at := t.At
	if at.IsZero() {
		at = s.now()
	}
	at = dlq.StoreTime(at)

	if len(t.From) == 1 && t.From[0] != dlq.StatusArchived {
		// The id's week, or the part recorded for an id without time
		// (one primary-key read before the statement: a sub-select in it
		// would prune only at execution, and the planner would plan
		// every partition for each transition). Should the part change
		// in between (ArchivePeriods keeping the entry live in 0), the
		// statement changes nothing and the transaction below decides.
		part, err := idPart(ctx, s.pool, t.DLQ, t.ID)
		if err != nil {
			return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: %w", name, err)
		}
		_, r, err := scanRecord(s.pool.QueryRow(ctx, `WITH moved AS (
				UPDATE dlq_entries
				SET status = $3, status_changed_at = $4, status_by = $5, version = version + 1
				WHERE dlq = $1 AND id = $2 AND part = $10::integer AND status = $6 AND ($7::bigint <= 0 OR version = $7::bigint)
				RETURNING `+cols(false, brief)+`),
			audit AS (
				INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status, reason)
				SELECT $4, $5, $8::text, dlq, id, $6, $3, $9 FROM moved WHERE $8::text <> '')
			SELECT * FROM moved`,
			t.DLQ, t.ID, string(t.To), at, t.Actor, string(t.From[0]), t.IfVersion, t.Action, t.Reason, part), brief)
		switch {
		case err == nil:
			return r, nil
		case !errors.Is(err, pgx.ErrNoRows):
			// A failed statement changed nothing. (Only stored headers
			// that do not decode, which pgstore never writes, fail after
			// the change was made.)
			return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: %w", name, err)
		}
		// Nothing changed: the transaction below finds out why (or makes
		// the transition, if the record became eligible meanwhile).
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: begin: %w", name, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	cur, err := get(ctx, tx, t.DLQ, t.ID, brief, true)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: %w", name, err)
	}
	from := cur.Status
	if from == dlq.StatusArchived || !slices.Contains(t.From, from) {
		return cur, fmt.Errorf("pgstore: transition entry %q to %s: %w: it is %s", name, t.To, dlq.ErrNotPending, from)
	}
	if t.IfVersion > 0 && cur.Version != t.IfVersion {
		return cur, fmt.Errorf("pgstore: transition entry %q to %s: %w: it changed meanwhile (version %d, not %d)",
			name, t.To, dlq.ErrNotPending, cur.Version, t.IfVersion)
	}
	w, err := idPart(ctx, tx, t.DLQ, t.ID)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: %w", name, err)
	}
	_, r, err := scanRecord(tx.QueryRow(ctx, `UPDATE dlq_entries
		SET status = $3, status_changed_at = $4, status_by = $5, version = version + 1
		WHERE dlq = $1 AND id = $2 AND part IN (0, $6::integer)
		RETURNING `+cols(false, brief), t.DLQ, t.ID, string(t.To), at, t.Actor, w), brief)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: update: %w", name, err)
	}
	if t.Action != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status, reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			at, t.Actor, t.Action, t.DLQ, t.ID, string(from), string(t.To), t.Reason); err != nil {
			return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: audit: %w", name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: transition entry %q: commit: %w", name, err)
	}
	return r, nil
}

// Audit implements dlq.Store.
func (s *Store) Audit(ctx context.Context, dlqName, id string) ([]dlq.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, at, actor, action, dlq, entry_id, from_status, to_status, reason
		FROM audit_log WHERE dlq = $1 AND entry_id = $2 ORDER BY seq`, dlqName, id)
	if err != nil {
		return nil, fmt.Errorf("pgstore: audit of %q: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dlq.AuditEntry, error) {
		var a dlq.AuditEntry
		var from, to string
		err := row.Scan(&a.Seq, &a.At, &a.Actor, &a.Action, &a.DLQ, &a.EntryID, &from, &to, &a.Reason)
		a.At, a.From, a.To = a.At.UTC(), dlq.Status(from), dlq.Status(to)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: audit of %q: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	return out, nil
}

// movedCols are the columns copied to the archive; the version counts the
// move.
var movedCols = strings.ReplaceAll(tableCols, "version,", "version + 1,")

// Archive implements dlq.Store in one statement: the rows are picked
// (skipping any locked by a transition in progress), deleted and inserted
// into the archive atomically.
func (s *Store) Archive(ctx context.Context, dlqName string, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `WITH moved AS (
			DELETE FROM dlq_entries WHERE seq IN (
				SELECT seq FROM dlq_entries
				WHERE dlq = $1 AND received_at < $2 AND status <> 'replaying'
				ORDER BY seq LIMIT $3
				FOR UPDATE SKIP LOCKED)
			RETURNING `+tableCols+`)
		INSERT INTO dlq_entries_archive (`+tableCols+`, archived_at)
		SELECT `+movedCols+`, $4 FROM moved`,
		dlqName, dlq.StoreTime(before), limit, dlq.StoreTime(s.now()))
	if err != nil {
		return 0, fmt.Errorf("pgstore: archive %q: %w", dlqName, err)
	}
	return int(tag.RowsAffected()), nil
}
