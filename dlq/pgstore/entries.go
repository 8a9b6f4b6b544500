package pgstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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

// Insert implements dlq.Store: INSERT … ON CONFLICT DO NOTHING on the
// unique (dlq, identity) and (dlq, id) keys, so concurrent inserts of one
// identity store one row; the archive is checked first.
func (s *Store) Insert(ctx context.Context, r dlq.Record) (dlq.Record, bool, error) {
	r, err := r.PrepareInsert(s.now())
	if err != nil {
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert: %w", err)
	}
	name := r.Key()
	// Idempotent across the archive too.
	_, old, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+cols(true, whole)+` FROM dlq_entries_archive
		WHERE dlq = $1 AND (identity = $2 OR id = $3) ORDER BY identity = $2 DESC LIMIT 1`, r.DLQ, r.Identity, r.ID), whole)
	switch {
	case err == nil && old.Identity == r.Identity:
		return s.filled(ctx, old, name)
	case err == nil:
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: %w (archived)", name, dlq.ErrIDConflict)
	case !errors.Is(err, pgx.ErrNoRows):
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: check archive: %w", name, err)
	}

	e := &r.Entry
	var seq int64
	err = s.pool.QueryRow(ctx, `INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at,
			message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers, original_wire,
			error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source, first_failure_at, last_failure_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28)
		ON CONFLICT DO NOTHING
		RETURNING seq`,
		r.DLQ, r.ID, r.Identity, r.Broker, r.Severity, string(r.Status), r.StatusChangedAt, r.StatusBy, r.Version, r.ReceivedAt,
		e.MessageID, e.OriginalTopic, e.OriginalPartition, e.OriginalOffset, e.OriginalKey, e.OriginalValue, encodeHeaders(e.OriginalHeaders), e.OriginalWire,
		e.ErrorClass, e.ErrorMessage, e.StackTrace, e.Reason, e.RetryCount, e.Worker, e.WorkerInstance, e.Source,
		nullTime(e.FirstFailureAt), nullTime(e.LastFailureAt),
	).Scan(&seq)
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: %w", name, err)
	}
	// A conflict: the same identity (a redelivery), or the id of another.
	_, old, err = scanRecord(s.pool.QueryRow(ctx, `SELECT `+cols(false, whole)+` FROM dlq_entries WHERE dlq = $1 AND identity = $2`, r.DLQ, r.Identity), whole)
	switch {
	case err == nil:
		return s.filled(ctx, old, name)
	case errors.Is(err, pgx.ErrNoRows):
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: %w", name, dlq.ErrIDConflict)
	default:
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: read existing: %w", name, err)
	}
}

// filled returns the existing record old of an insert, its value read.
func (s *Store) filled(ctx context.Context, old dlq.Record, name string) (dlq.Record, bool, error) {
	recs := []dlq.Record{old}
	if err := fillValues(ctx, s.pool, recs); err != nil {
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: read existing: %w", name, err)
	}
	return recs[0], false, nil
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
	rows, err := s.pool.Query(ctx, `SELECT `+cols(false, whole)+` FROM dlq_entries WHERE dlq = $1 AND id = ANY($2)
		UNION ALL SELECT `+cols(true, whole)+` FROM dlq_entries_archive WHERE dlq = $1 AND id = ANY($2)`, dlqName, ids)
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
	var b []byte
	for _, table := range []string{"dlq_entries", "dlq_entries_archive"} {
		err := s.pool.QueryRow(ctx, `SELECT substring(original_value FROM $3 FOR $4) FROM `+table+` WHERE dlq = $1 AND id = $2`,
			dlqName, id, off+1, n).Scan(&b)
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
// the preview's length); dlq.ErrNotFound when neither exists.
func get(ctx context.Context, q querier, dlqName, id string, m message, lock bool, previewLen ...int) (dlq.Record, error) {
	args := []any{dlqName, id}
	if m == preview {
		args = append(args, previewLen[0])
	}
	sql := `SELECT ` + cols(false, m) + ` FROM dlq_entries WHERE dlq = $1 AND id = $2`
	if lock {
		sql += ` FOR UPDATE`
	}
	_, r, err := scanRecord(q.QueryRow(ctx, sql, args...), m)
	if !errors.Is(err, pgx.ErrNoRows) {
		return r, err
	}
	_, r, err = scanRecord(q.QueryRow(ctx, `SELECT `+cols(true, m)+` FROM dlq_entries_archive WHERE dlq = $1 AND id = $2`, args...), m)
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
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM `+table+w.String()+` ORDER BY seq `+order+fmt.Sprintf(` LIMIT %d`, limit+1), w.args...)
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

// Count implements dlq.Store.
func (s *Store) Count(ctx context.Context, q dlq.Query) (int64, error) {
	q.Cursor = ""
	if err := q.Validate(); err != nil {
		return 0, fmt.Errorf("pgstore: count: %w", err)
	}
	table, _, w := filter(q)
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+table+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("pgstore: count %q: %w", q.DLQ, err)
	}
	return n, nil
}

// Summaries implements dlq.Store with grouped counts (index scans on
// (dlq, status, seq)), not a read of every record.
func (s *Store) Summaries(ctx context.Context) ([]dlq.Summary, error) {
	sums := map[string]*dlq.Summary{}
	get := func(name string) *dlq.Summary {
		if sums[name] == nil {
			sums[name] = &dlq.Summary{DLQ: name}
		}
		return sums[name]
	}
	rows, err := s.pool.Query(ctx, `SELECT dlq,
			count(*) FILTER (WHERE status = 'pending'),
			count(*) FILTER (WHERE status = 'replaying'),
			count(*) FILTER (WHERE status = 'replayed'),
			count(*) FILTER (WHERE status = 'discarded'),
			min(received_at) FILTER (WHERE status = 'pending'),
			max(received_at)
		FROM dlq_entries GROUP BY dlq`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries: %w", err)
	}
	for rows.Next() {
		var name string
		var oldest, lastAt *time.Time
		var p, rg, rd, d int64
		if err := rows.Scan(&name, &p, &rg, &rd, &d, &oldest, &lastAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: summaries: %w", err)
		}
		sum := get(name)
		sum.Pending, sum.Replaying, sum.Replayed, sum.Discarded = p, rg, rd, d
		if oldest != nil {
			sum.OldestPending = oldest.UTC()
		}
		if lastAt != nil {
			sum.LastReceived = lastAt.UTC()
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: summaries: %w", err)
	}

	rows, err = s.pool.Query(ctx, `SELECT dlq, count(*), max(received_at) FROM dlq_entries_archive GROUP BY dlq`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries: archive: %w", err)
	}
	for rows.Next() {
		var name string
		var n int64
		var lastAt time.Time
		if err := rows.Scan(&name, &n, &lastAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: summaries: archive: %w", err)
		}
		sum := get(name)
		sum.Archived = n
		if lastAt.After(sum.LastReceived) {
			sum.LastReceived = lastAt.UTC()
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: summaries: archive: %w", err)
	}

	// Broker and severity of each DLQ's newest record, live before
	// archived: one index lookup per DLQ on (dlq, seq).
	names := slices.Sorted(maps.Keys(sums))
	rows, err = s.pool.Query(ctx, `SELECT n.dlq, e.broker, e.severity FROM unnest($1::text[]) AS n(dlq)
		CROSS JOIN LATERAL (
			(SELECT broker, severity, 0 AS archived FROM dlq_entries WHERE dlq = n.dlq ORDER BY seq DESC LIMIT 1)
			UNION ALL
			(SELECT broker, severity, 1 FROM dlq_entries_archive WHERE dlq = n.dlq ORDER BY seq DESC LIMIT 1)
			ORDER BY archived LIMIT 1) e`, names)
	if err != nil {
		return nil, fmt.Errorf("pgstore: summaries: severities: %w", err)
	}
	for rows.Next() {
		var name, b, sev string
		if err := rows.Scan(&name, &b, &sev); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgstore: summaries: severities: %w", err)
		}
		sum := get(name)
		sum.Broker, sum.Severity = b, sev
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: summaries: severities: %w", err)
	}

	out := make([]dlq.Summary, 0, len(sums))
	for _, name := range names {
		out = append(out, *sums[name])
	}
	return out, nil
}
