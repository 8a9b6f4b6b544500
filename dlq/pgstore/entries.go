package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// nullTime is t, or NULL when t is zero.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Get implements dlq.Store.
func (s *Store) Get(ctx context.Context, dlqName, id string) (dlq.Record, error) {
	r, err := get(ctx, s.pool, dlqName, id, whole, false)
	if err == nil {
		recs := []dlq.Record{r}
		err = fillValues(ctx, s.pool, recs)
		r = recs[0]
	}
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: get entry %q: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	return r, nil
}

// Preview implements dlq.Store: the value is cut by the database, so that
// only limit bytes of it cross the connection.
func (s *Store) Preview(ctx context.Context, dlqName, id string, limit int) (dlq.Record, error) {
	r, err := get(ctx, s.pool, dlqName, id, preview, false, max(limit, 0))
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: preview entry %q: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	return r, nil
}

// GetMany implements dlq.Store.
func (s *Store) GetMany(ctx context.Context, dlqName string, ids []string) ([]dlq.Record, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	recorded, err := recordedParts(ctx, s.pool, dlqName, ids)
	if err != nil {
		return nil, fmt.Errorf("pgstore: get %d entries of %q: %w", len(ids), dlqName, err)
	}
	parts := idsParts(ids, recorded)
	rows, err := s.pool.Query(ctx, `SELECT `+cols(false, whole)+` FROM dlq_entries WHERE dlq = $1 AND id = ANY($2) AND `+parts+`
		UNION ALL SELECT `+cols(true, whole)+` FROM dlq_entries_archive WHERE dlq = $1 AND id = ANY($2) AND `+parts, dlqName, ids)
	if err != nil {
		return nil, fmt.Errorf("pgstore: get %d entries of %q: %w", len(ids), dlqName, err)
	}
	byID := make(map[string]dlq.Record, len(ids))
	for rows.Next() {
		_, r, err := scanRecord(rows, whole)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: get %d entries of %q: %w", len(ids), dlqName, err)
		}
		if _, dup := byID[r.ID]; !dup { // live before archived (a record moving meanwhile)
			byID[r.ID] = r
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: get %d entries of %q: %w", len(ids), dlqName, err)
	}
	out := make([]dlq.Record, 0, len(byID))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, r)
			delete(byID, id)
		}
	}
	if err := fillValues(ctx, s.pool, out); err != nil {
		return nil, fmt.Errorf("pgstore: get %d entries of %q: %w", len(ids), dlqName, err)
	}
	return out, nil
}

// ReadValue implements dlq.Store: the database cuts the chunk.
func (s *Store) ReadValue(ctx context.Context, dlqName, id string, off int64, n int) ([]byte, error) {
	name := dlq.ReplayedFrom(dlqName, id)
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("pgstore: read value of %q: negative offset or length", name)
	}
	w, err := idPart(ctx, s.pool, dlqName, id)
	if err != nil {
		return nil, fmt.Errorf("pgstore: read value of %q: %w", name, err)
	}
	var b []byte
	for _, table := range []string{"dlq_entries", "dlq_entries_archive"} {
		err := s.pool.QueryRow(ctx, `SELECT substring(original_value FROM $3 FOR $4) FROM `+table+` WHERE dlq = $1 AND id = $2 AND part IN (0, $5::integer)`,
			dlqName, id, off+1, n, w).Scan(&b)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("pgstore: read value of %q: %w", name, err)
		}
	}
	return nil, fmt.Errorf("pgstore: read value of %q: %w", name, dlq.ErrNotFound)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// get reads a live record (locking it FOR UPDATE when lock is set) or, when
// there is none, an archived one, loading m of its message (previewLen:
// the preview's length); dlq.ErrNotFound when neither exists. It reads
// the partitions id may be in only (0 and its week, or for an id without
// time its recorded part: idPart): unlocked, the week's first (where the
// store puts an entry), then 0 (one partition to plan per statement);
// locked, both in one statement.
func get(ctx context.Context, q querier, dlqName, id string, m message, lock bool, previewLen ...int) (dlq.Record, error) {
	args := []any{dlqName, id}
	if m == preview {
		args = append(args, previewLen[0])
	}
	w, err := idPart(ctx, q, dlqName, id)
	if err != nil {
		return dlq.Record{}, err
	}
	args = append(args, w) // the last parameter
	param := fmt.Sprintf("$%d::integer", len(args))
	tries := []string{" AND part IN (0, " + param + ")"}
	if !lock && w > 0 {
		tries = []string{" AND part = " + param, " AND part = 0"}
	} else if !lock {
		tries = []string{" AND part = " + param} // w is 0
	}
	for _, parts := range tries {
		sql := `SELECT ` + cols(false, m) + ` FROM dlq_entries WHERE dlq = $1 AND id = $2` + parts
		if lock {
			sql += ` FOR UPDATE`
		}
		a := args
		if !strings.Contains(parts, param) {
			a = args[:len(args)-1]
		}
		_, r, err := scanRecord(q.QueryRow(ctx, sql, a...), m)
		if !errors.Is(err, pgx.ErrNoRows) {
			return r, err
		}
	}
	_, r, err := scanRecord(q.QueryRow(ctx, `SELECT `+cols(true, m)+` FROM dlq_entries_archive WHERE dlq = $1 AND id = $2 AND part IN (0, `+param+`)`, args...), m)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, dlq.ErrNotFound
	}
	return r, err
}

// where renders the conditions of q (cursor aside) as parameterised SQL.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, fmt.Sprintf(cond, len(w.args)))
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// filter returns the table q reads, its brief columns and q's conditions.
func filter(q dlq.Query) (table, columns string, w *where) {
	w = &where{}
	table, columns = "dlq_entries", cols(false, brief)
	if q.Status == dlq.StatusArchived {
		table, columns = "dlq_entries_archive", cols(true, brief)
	}
	if q.DLQ != "" {
		w.add("dlq = $%d", q.DLQ)
	}
	if q.Status != "" && q.Status != dlq.StatusArchived {
		w.add("status = $%d", string(q.Status))
	}
	if q.ErrorClass != "" {
		w.add("error_class = $%d", dlq.CleanText(q.ErrorClass))
	}
	if q.Group != "" {
		w.add("fingerprint = $%d", q.Group)
	}
	if q.Text != "" {
		w.add("strpos(lower(error_message), lower($%d)) > 0", dlq.CleanText(q.Text))
	}
	if !q.Since.IsZero() {
		w.add("received_at >= $%d", q.Since)
	}
	if !q.Until.IsZero() {
		w.add("received_at < $%d", q.Until)
	}
	return table, columns, w
}

// coveredWindow reports whether q's conditions are all in the covering
// (dlq, received_at) index of the live entries (schema version 8) and
// bound the time: a page of a time window is then chosen from the index
// alone.
func coveredWindow(q dlq.Query) bool {
	return (!q.Since.IsZero() || !q.Until.IsZero()) && q.DLQ != "" && q.Status != dlq.StatusArchived && q.ErrorClass == "" && q.Text == ""
}

// List implements dlq.Store: keyset paging on seq.
func (s *Store) List(ctx context.Context, q dlq.Query) (dlq.Page, error) {
	if err := q.Validate(); err != nil {
		return dlq.Page{}, fmt.Errorf("pgstore: list: %w", err)
	}
	table, columns, w := filter(q)
	order := "ASC"
	if q.NewestFirst {
		order = "DESC"
	}
	if q.Cursor != "" {
		c, _ := dlq.DecodeCursor(q.Cursor) // validated
		if q.NewestFirst {
			w.add("seq < $%d", c.After)
		} else {
			w.add("seq > $%d", c.After)
		}
	}
	limit := q.PageLimit()
	pick := ` FROM ` + table + w.String() + ` ORDER BY seq ` + order + fmt.Sprintf(` LIMIT %d`, limit+1)
	sql := `SELECT ` + columns + pick
	if coveredWindow(q) {
		// The page's seqs from the covering (dlq, received_at) index
		// (a top-N of the window's index tuples, or the (dlq, status,
		// seq) index for a window the planner finds wide), then the
		// page's rows only: not every entry of the window read and
		// sorted by seq.
		sql = `WITH k AS MATERIALIZED (SELECT part, seq` + pick + `)
			SELECT ` + columns + ` FROM ` + table + ` JOIN k USING (part, seq) ORDER BY seq ` + order
	}
	rows, err := s.pool.Query(ctx, sql, w.args...)
	if err != nil {
		return dlq.Page{}, fmt.Errorf("pgstore: list %q: %w", q.DLQ, err)
	}
	defer rows.Close()
	var page dlq.Page
	var last int64
	for rows.Next() {
		seq, r, err := scanRecord(rows, brief)
		if err != nil {
			return dlq.Page{}, fmt.Errorf("pgstore: list %q: %w", q.DLQ, err)
		}
		if len(page.Records) == limit {
			page.Next = dlq.Cursor{After: last, NewestFirst: q.NewestFirst}.Encode()
			break
		}
		page.Records = append(page.Records, r)
		last = seq
	}
	if err := rows.Err(); err != nil {
		return dlq.Page{}, fmt.Errorf("pgstore: list %q: %w", q.DLQ, err)
	}
	return page, nil
}

// Count implements dlq.Store: from dlq_counts when q selects by DLQ and
// status only (what the console's header and the gauges ask), else by
// counting the entries q selects. Until the backfill of schema version 3
// is done, the entries it has yet to count are counted (countsSQL).
func (s *Store) Count(ctx context.Context, q dlq.Query) (int64, error) {
	q.Cursor = ""
	if err := q.Validate(); err != nil {
		return 0, fmt.Errorf("pgstore: count: %w", err)
	}
	var n int64
	if q.ErrorClass == "" && q.Text == "" && q.Group == "" && q.Since.IsZero() && q.Until.IsZero() {
		status := string(q.Status)
		counts, err := s.countsSQL(ctx)
		if err != nil {
			return 0, fmt.Errorf("pgstore: count %q: %w", q.DLQ, err)
		}
		err = s.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM `+counts+` c
			WHERE ($1 = '' OR dlq = $1) AND CASE WHEN $2 = '' THEN status <> 'archived' ELSE status = $2 END`, q.DLQ, status).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("pgstore: count %q: %w", q.DLQ, err)
		}
		return n, nil
	}
	table, _, w := filter(q)
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+table+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("pgstore: count %q: %w", q.DLQ, err)
	}
	return n, nil
}

// Summaries implements dlq.Store: the counts from dlq_counts, then per
// DLQ a few index probes: its newest record (broker, severity), its first
// pending record by insertion order and its latest received time.
func (s *Store) Summaries(ctx context.Context) ([]dlq.Summary, error) {
	counts, err := s.countsSQL(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries: %w", err)
	}
	rows, err := s.pool.Query(ctx, `WITH c AS (
			SELECT dlq,
				sum(n) FILTER (WHERE status = 'pending')::bigint AS pending,
				sum(n) FILTER (WHERE status = 'replaying')::bigint AS replaying,
				sum(n) FILTER (WHERE status = 'replayed')::bigint AS replayed,
				sum(n) FILTER (WHERE status = 'discarded')::bigint AS discarded,
				sum(n) FILTER (WHERE status = 'archived')::bigint AS archived
			FROM `+counts+` a GROUP BY dlq HAVING sum(n) > 0)
		SELECT c.dlq, coalesce(c.pending, 0), coalesce(c.replaying, 0), coalesce(c.replayed, 0), coalesce(c.discarded, 0), coalesce(c.archived, 0),
			e.broker, e.severity,
			(SELECT received_at FROM dlq_entries WHERE dlq = c.dlq AND status = 'pending' ORDER BY seq LIMIT 1),
			greatest((SELECT max(received_at) FROM dlq_entries WHERE dlq = c.dlq),
				(SELECT max(received_at) FROM dlq_entries_archive WHERE dlq = c.dlq))
		FROM c CROSS JOIN LATERAL (
			(SELECT broker, severity, 0 AS archived FROM dlq_entries WHERE dlq = c.dlq ORDER BY seq DESC LIMIT 1)
			UNION ALL
			(SELECT broker, severity, 1 FROM dlq_entries_archive WHERE dlq = c.dlq ORDER BY seq DESC LIMIT 1)
			ORDER BY archived LIMIT 1) e
		ORDER BY c.dlq`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dlq.Summary, error) {
		var sum dlq.Summary
		var oldest, lastAt *time.Time
		err := row.Scan(&sum.DLQ, &sum.Pending, &sum.Replaying, &sum.Replayed, &sum.Discarded, &sum.Archived,
			&sum.Broker, &sum.Severity, &oldest, &lastAt)
		if oldest != nil {
			sum.OldestPending = oldest.UTC()
		}
		if lastAt != nil {
			sum.LastReceived = lastAt.UTC()
		}
		return sum, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries: %w", err)
	}
	return out, nil
}
