package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// archiveMoveBatch is how many entries one statement of ArchivePeriods
// moves to partition 0 (one short transaction each).
const archiveMoveBatch = 1000

// mustStay is the condition on an entry e of a week partition that keeps
// it live when its week goes to the archive: its DLQ has no finite
// retention ($1, $2: the DLQs that have one, and the time before which
// their entries are past it), it is not past it, or it is replaying.
const mustStay = `(e.status = 'replaying' OR NOT EXISTS (
		SELECT 1 FROM unnest($1::text[], $2::timestamptz[]) AS r(dlq, before)
		WHERE r.dlq = e.dlq AND e.received_at < r.before))`

// ArchivePeriods implements dlq.PeriodArchiver: it archives the week
// partitions that ended before now, whose every DLQ with a finite
// retention (retention, by DLQ; absent = kept forever) has its week past
// that retention, each as a partition operation (a partition without any
// such DLQ stays as it is, unless empty). First the entries that
// must stay live (of a DLQ absent from retention, not past its retention
// by their received time, or replaying) move to partition 0, in
// statements of archiveMoveBatch entries; then one transaction takes a
// SHARE lock of the partition (writes of its entries wait, reads go on),
// moves the entries that became replaying meanwhile, counts the partition
// (the pending entries are reported, by DLQ), detaches it (a brief ACCESS
// EXCLUSIVE lock of dlq_entries), gives it the column archived_at (now,
// as a default: no rewrite), attaches it to dlq_entries_archive and
// moves its counts in dlq_counts to archived. It gives up on a partition
// after lock_timeout (5 s) of waiting, to try again later. Its entries
// keep their version (a row archive adds one), and their identities stay
// in dlq_keys, so that a redelivery of one is still a duplicate. An entry
// of an id without time keeps its row of dlq_id_parts: archived, its part
// is the same in the archive; kept live, the row says 0.
func (s *Store) ArchivePeriods(ctx context.Context, retention map[string]time.Duration) (dlq.PeriodsArchived, error) {
	out := dlq.PeriodsArchived{Archived: map[string]int{}, Pending: map[string]int{}}
	now := s.now()
	weeks, err := livePartitions(ctx, s.pool, "dlq_entries")
	if err != nil {
		return out, fmt.Errorf("pgstore: archive periods: %w", err)
	}
	cur := timeWeek(now)
	var past []int32
	for w := range weeks {
		if w < cur {
			past = append(past, w)
		}
	}
	slices.Sort(past)
	for _, w := range past {
		if err := s.archivePartition(ctx, w, retention, now, &out); err != nil {
			return out, fmt.Errorf("pgstore: archive the partition of week %d: %w", w, err)
		}
	}
	if len(past) > 0 {
		if err := s.refreshPartitions(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}

// archivePartition archives the partition of week w when it may (see
// ArchivePeriods).
func (s *Store) archivePartition(ctx context.Context, w int32, retention map[string]time.Duration, now time.Time, out *dlq.PeriodsArchived) error {
	name := "dlq_entries_w" + strconv.Itoa(int(w))
	// The DLQs of the partition (a skip scan of its (dlq, seq) index).
	rows, err := s.pool.Query(ctx, `WITH RECURSIVE d AS (
			(SELECT dlq FROM `+name+` ORDER BY dlq LIMIT 1)
			UNION ALL
			SELECT (SELECT dlq FROM `+name+` WHERE dlq > d.dlq ORDER BY dlq LIMIT 1) FROM d WHERE d.dlq IS NOT NULL)
		SELECT dlq FROM d WHERE dlq IS NOT NULL`)
	if err != nil {
		return err
	}
	dlqs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	end := weekStart(w + 1)
	var names []string
	var befores []time.Time
	for _, d := range dlqs {
		r, ok := retention[d]
		if !ok || r <= 0 {
			continue // kept: its entries move to partition 0
		}
		if end.Add(r).After(now) {
			return nil // this DLQ keeps the week a while longer
		}
		names, befores = append(names, d), append(befores, dlq.StoreTime(now.Add(-r)))
	}
	if len(names) == 0 && len(dlqs) > 0 {
		return nil // nothing in it to archive: it stays as it is
	}
	// The entries that stay, to partition 0, a batch at a time.
	for after := int64(0); ; {
		var n int
		var last *int64
		err := s.pool.QueryRow(ctx, `WITH moved AS (
				UPDATE dlq_entries SET part = 0 WHERE part = `+strconv.Itoa(int(w))+` AND seq IN (
					SELECT seq FROM `+name+` e WHERE e.seq > $3 AND `+mustStay+`
					ORDER BY seq LIMIT `+strconv.Itoa(archiveMoveBatch)+` FOR UPDATE SKIP LOCKED)
				RETURNING seq, dlq, id),
			`+movedIDParts(w)+`
			SELECT count(*), max(seq) FROM moved`, names, befores, after).Scan(&n, &last)
		if err != nil {
			return fmt.Errorf("keep entries: %w", err)
		}
		out.Kept += n
		if n < archiveMoveBatch || last == nil {
			break
		}
		after = *last
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+name+` IN SHARE MODE`); err != nil {
		return err
	}
	var kept int
	if err := tx.QueryRow(ctx, `WITH moved AS (
			UPDATE dlq_entries SET part = 0 WHERE part = `+strconv.Itoa(int(w))+` AND seq IN (
				SELECT seq FROM `+name+` e WHERE `+mustStay+`)
			RETURNING seq, dlq, id),
		`+movedIDParts(w)+`
		SELECT count(*) FROM moved`, names, befores).Scan(&kept); err != nil {
		return fmt.Errorf("keep entries: %w", err)
	}
	out.Kept += kept
	// The partition's counts, as the triggers would have counted them.
	type count struct {
		dlq, status, severity string
		n                     int64
	}
	rows, err = tx.Query(ctx, `SELECT dlq, status, severity, count(*) FROM `+name+`
		WHERE seq > (SELECT upto FROM dlq_counts_backfill) OR seq <= (SELECT done FROM dlq_counts_backfill)
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
	if err != nil {
		return err
	}
	var counts []count
	var c count
	if _, err := pgx.ForEachRow(rows, []any{&c.dlq, &c.status, &c.severity, &c.n}, func() error {
		counts = append(counts, c)
		return nil
	}); err != nil {
		return err
	}
	archive := "dlq_entries_archive_w" + strconv.Itoa(int(w))
	for _, sql := range []string{
		`ALTER TABLE dlq_entries DETACH PARTITION ` + name,
		`ALTER TABLE ` + name + ` ADD COLUMN archived_at timestamptz NOT NULL DEFAULT ` + quoteTime(dlq.StoreTime(now)),
		`ALTER TABLE ` + name + ` RENAME TO ` + archive,
		`ALTER TABLE dlq_entries_archive ATTACH PARTITION ` + archive + ` FOR VALUES IN (` + strconv.Itoa(int(w)) + `)`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	var ds, sts, sevs []string
	var ns []int64
	archived := map[string]int{}
	for _, c := range counts {
		ds, sts, sevs, ns = append(ds, c.dlq, c.dlq), append(sts, c.status, "archived"), append(sevs, c.severity, c.severity), append(ns, -c.n, c.n)
		archived[c.dlq] += int(c.n)
		if c.status == string(dlq.StatusPending) {
			out.Pending[c.dlq] += int(c.n)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO dlq_counts AS c (dlq, status, severity, n)
		SELECT dlq, status, severity, sum(n) FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS x(dlq, status, severity, n)
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
		ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n`, ds, sts, sevs, ns); err != nil {
		return fmt.Errorf("move counts: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	for d, n := range archived {
		out.Archived[d] += n
	}
	out.Partitions++
	return nil
}

// movedIDParts is the CTE that records partition 0 in dlq_id_parts for
// the entries of ids without time that a CTE moved (dlq, id) moved there
// out of week w.
func movedIDParts(w int32) string {
	return `idparts AS (UPDATE dlq_id_parts p SET part = 0 FROM moved m
		WHERE p.dlq = m.dlq AND p.id = m.id AND p.part = ` + strconv.Itoa(int(w)) + `)`
}

// quoteTime is t as an SQL timestamptz literal.
func quoteTime(t time.Time) string {
	return `'` + t.UTC().Format("2006-01-02 15:04:05.999999") + `+00'`
}
