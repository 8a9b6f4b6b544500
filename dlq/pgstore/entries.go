package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// liveCols are the columns of a record read from dlq_entries, in scan
// order.
const liveCols = `seq, dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at,
	message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers,
	error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source,
	first_failure_at, last_failure_at`

// archivedCols read a record from dlq_entries_archive: status archived,
// changed when archived, by the archiver.
const archivedCols = `seq, dlq, id, identity, broker, severity, 'archived', archived_at, '` + dlq.ArchiverActor + `', version, received_at,
	message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers,
	error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source,
	first_failure_at, last_failure_at`

// scanRecord reads one row of liveCols or archivedCols.
func scanRecord(row pgx.Row) (int64, dlq.Record, error) {
	var (
		seq         int64
		r           dlq.Record
		status      string
		headers     []byte
		first, last *time.Time
	)
	e := &r.Entry
	err := row.Scan(&seq, &r.DLQ, &r.ID, &r.Identity, &r.Broker, &r.Severity, &status, &r.StatusChangedAt, &r.StatusBy, &r.Version, &r.ReceivedAt,
		&e.MessageID, &e.OriginalTopic, &e.OriginalPartition, &e.OriginalOffset, &e.OriginalKey, &e.OriginalValue, &headers,
		&e.ErrorClass, &e.ErrorMessage, &e.StackTrace, &e.Reason, &e.RetryCount, &e.Worker, &e.WorkerInstance, &e.Source,
		&first, &last)
	if err != nil {
		return 0, r, err
	}
	r.Status = dlq.Status(status)
	r.StatusChangedAt = r.StatusChangedAt.UTC()
	r.ReceivedAt = r.ReceivedAt.UTC()
	if first != nil {
		e.FirstFailureAt = first.UTC()
	}
	if last != nil {
		e.LastFailureAt = last.UTC()
	}
	if e.OriginalHeaders, err = decodeHeaders(headers); err != nil {
		return 0, r, fmt.Errorf("headers of %s: %w", r.Key(), err)
	}
	return seq, r, nil
}

// encodeHeaders renders headers as a JSON array of [name, value] pairs,
// each base64, sorted by name; nil for nil headers.
func encodeHeaders(h map[string]string) []byte {
	if h == nil {
		return nil
	}
	pairs := make([][2][]byte, 0, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		pairs = append(pairs, [2][]byte{[]byte(k), []byte(h[k])})
	}
	b, _ := json.Marshal(pairs) // cannot fail: only byte slices
	return b
}

func decodeHeaders(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	var pairs [][2][]byte
	if err := json.Unmarshal(b, &pairs); err != nil {
		return nil, err
	}
	h := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		h[string(kv[0])] = string(kv[1])
	}
	return h, nil
}

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
	_, old, err := scanRecord(s.pool.QueryRow(ctx, `SELECT `+archivedCols+` FROM dlq_entries_archive
		WHERE dlq = $1 AND (identity = $2 OR id = $3) ORDER BY identity = $2 DESC LIMIT 1`, r.DLQ, r.Identity, r.ID))
	switch {
	case err == nil && old.Identity == r.Identity:
		return old, false, nil
	case err == nil:
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: %w (archived)", name, dlq.ErrIDConflict)
	case !errors.Is(err, pgx.ErrNoRows):
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: check archive: %w", name, err)
	}

	e := &r.Entry
	var seq int64
	err = s.pool.QueryRow(ctx, `INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at,
			message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers,
			error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source, first_failure_at, last_failure_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
		ON CONFLICT DO NOTHING
		RETURNING seq`,
		r.DLQ, r.ID, r.Identity, r.Broker, r.Severity, string(r.Status), r.StatusChangedAt, r.StatusBy, r.Version, r.ReceivedAt,
		e.MessageID, e.OriginalTopic, e.OriginalPartition, e.OriginalOffset, e.OriginalKey, e.OriginalValue, encodeHeaders(e.OriginalHeaders),
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
	_, old, err = scanRecord(s.pool.QueryRow(ctx, `SELECT `+liveCols+` FROM dlq_entries WHERE dlq = $1 AND identity = $2`, r.DLQ, r.Identity))
	switch {
	case err == nil:
		return old, false, nil
	case errors.Is(err, pgx.ErrNoRows):
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: %w", name, dlq.ErrIDConflict)
	default:
		return dlq.Record{}, false, fmt.Errorf("pgstore: insert entry %q: read existing: %w", name, err)
	}
}

// Get implements dlq.Store.
func (s *Store) Get(ctx context.Context, dlqName, id string) (dlq.Record, error) {
	r, err := get(ctx, s.pool, dlqName, id, false)
	if err != nil {
		return dlq.Record{}, fmt.Errorf("pgstore: get entry %q: %w", dlq.ReplayedFrom(dlqName, id), err)
	}
	return r, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// get reads a live record (locking it FOR UPDATE when lock is set) or, when
// there is none, an archived one; dlq.ErrNotFound when neither exists.
func get(ctx context.Context, q querier, dlqName, id string, lock bool) (dlq.Record, error) {
	sql := `SELECT ` + liveCols + ` FROM dlq_entries WHERE dlq = $1 AND id = $2`
	if lock {
		sql += ` FOR UPDATE`
	}
	_, r, err := scanRecord(q.QueryRow(ctx, sql, dlqName, id))
	if !errors.Is(err, pgx.ErrNoRows) {
		return r, err
	}
	_, r, err = scanRecord(q.QueryRow(ctx, `SELECT `+archivedCols+` FROM dlq_entries_archive WHERE dlq = $1 AND id = $2`, dlqName, id))
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

// filter returns the table q reads, its columns and q's conditions.
func filter(q dlq.Query) (table, cols string, w *where) {
	w = &where{}
	table, cols = "dlq_entries", liveCols
	if q.Status == dlq.StatusArchived {
		table, cols = "dlq_entries_archive", archivedCols
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
	return table, cols, w
}

// List implements dlq.Store: keyset paging on seq.
func (s *Store) List(ctx context.Context, q dlq.Query) (dlq.Page, error) {
	if err := q.Validate(); err != nil {
		return dlq.Page{}, fmt.Errorf("pgstore: list: %w", err)
	}
	table, cols, w := filter(q)
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
	rows, err := s.pool.Query(ctx, `SELECT `+cols+` FROM `+table+w.String()+` ORDER BY seq `+order+fmt.Sprintf(` LIMIT %d`, limit+1), w.args...)
	if err != nil {
		return dlq.Page{}, fmt.Errorf("pgstore: list %q: %w", q.DLQ, err)
	}
	defer rows.Close()
	var page dlq.Page
	var last int64
	for rows.Next() {
		seq, r, err := scanRecord(rows)
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
