package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// Entries are partitioned by the week of their id (schema version 6, see
// migrations/0006_partitions.sql): partition 0 keeps the entries of
// version 5, those of a week whose partition does not exist, and those
// that outlived their week's archiving; partition N > 0 holds the entries
// whose id was made by dlq.NewID in week N since the Unix epoch.

// weekMillis is the length of a partition's period.
const weekMillis = 7 * 24 * 60 * 60 * 1000

// PartitionsAhead is how many weeks after the current one have their
// partition created in advance.
const PartitionsAhead = 2

// maintainEvery is how often the background maintenance creates the
// partitions ahead.
const maintainEvery = time.Hour

// crockford is dlq.NewID's alphabet, by character: its value + 1 (0 for
// a character outside it).
var crockford = func() (t [256]byte) {
	for i, c := range "0123456789abcdefghjkmnpqrstvwxyz" {
		t[c] = byte(i + 1)
	}
	return t
}()

// idWeek returns the week of an id made by dlq.NewID (26 lower-case
// Crockford characters, the first 10 of which are its milliseconds since
// the epoch), or 0 for an id of another shape (or of a time before 2001
// or after 2200).
func idWeek(id string) int32 {
	if len(id) != 26 {
		return 0
	}
	var ms int64
	for i := range 26 {
		v := crockford[id[i]]
		if v == 0 {
			return 0
		}
		if i < 10 {
			ms = ms<<5 | int64(v-1)
		}
	}
	const from, to = 978307200000, 7258118400000 // 2001-01-01, 2200-01-01
	if ms < from || ms >= to {
		return 0
	}
	return int32(ms / weekMillis)
}

// timeWeek is the week of t.
func timeWeek(t time.Time) int32 { return int32(t.UnixMilli() / weekMillis) }

// weekStart is when week w begins.
func weekStart(w int32) time.Time { return time.UnixMilli(int64(w) * weekMillis).UTC() }

// idsParts is the condition that selects the partitions the entries of
// ids may be in (0 and their weeks), with the weeks as literals, so that
// PostgreSQL reads those only.
func idsParts(ids []string) string {
	var b strings.Builder
	b.WriteString("part IN (0")
	seen := map[int32]bool{0: true}
	for _, id := range ids {
		if w := idWeek(id); !seen[w] {
			seen[w] = true
			b.WriteString(", " + strconv.Itoa(int(w)))
		}
	}
	b.WriteString(")")
	return b.String()
}

// partitionSet is the week partitions of dlq_entries known to exist.
type partitionSet struct {
	mu    sync.Mutex
	weeks map[int32]bool
}

func (p *partitionSet) has(w int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.weeks[w]
}

func (p *partitionSet) set(weeks map[int32]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.weeks = weeks
}

// partOf is the partition an insert puts r in: its id's week when that
// partition exists, else 0.
func (s *Store) partOf(id string) int32 {
	if w := idWeek(id); w > 0 && s.parts.has(w) {
		return w
	}
	return 0
}

// rowsQuerier is a pool, a connection or a transaction.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// livePartitions returns the weeks of the partitions of table.
func livePartitions(ctx context.Context, q rowsQuerier, table string) (map[int32]bool, error) {
	rows, err := q.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, table)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[int32]bool{}
	prefix := table + "_w"
	for _, n := range names {
		if len(n) > len(prefix) && n[:len(prefix)] == prefix {
			if w, err := strconv.ParseInt(n[len(prefix):], 10, 32); err == nil {
				out[int32(w)] = true
			}
		}
	}
	return out, nil
}

// refreshPartitions reloads the set of week partitions.
func (s *Store) refreshPartitions(ctx context.Context) error {
	weeks, err := livePartitions(ctx, s.pool, "dlq_entries")
	if err != nil {
		return fmt.Errorf("pgstore: list partitions: %w", err)
	}
	s.parts.set(weeks)
	return nil
}

// Maintain creates the partitions of the current week and of the
// PartitionsAhead weeks after it that do not exist (nor were archived),
// and reloads the set of partitions inserts use. Open runs it, then the
// store every hour in the background; it may run on several instances at
// once (an advisory lock serialises them). Creating a partition is a
// CREATE TABLE then an ATTACH PARTITION, which takes a SHARE UPDATE
// EXCLUSIVE lock of dlq_entries (reads and writes go on); it gives up
// after a few seconds of waiting for that lock (lock_timeout), to try
// again later: an entry of a missing week goes to partition 0.
func (s *Store) Maintain(ctx context.Context) error {
	cur := timeWeek(s.now())
	for w := cur; w <= cur+PartitionsAhead; w++ {
		if err := s.createPartition(ctx, w); err != nil {
			return fmt.Errorf("pgstore: create the partition of week %d: %w", w, err)
		}
	}
	return s.refreshPartitions(ctx)
}

// createPartition creates the partition of week w unless it exists, in
// dlq_entries or in the archive.
func (s *Store) createPartition(ctx context.Context, w int32) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('redrive/dlq/partitions/' || current_schema(), 0))`); err != nil {
		return err
	}
	name := "dlq_entries_w" + strconv.Itoa(int(w))
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL OR to_regclass($2) IS NOT NULL`,
		name, "dlq_entries_archive_w"+strconv.Itoa(int(w))).Scan(&exists); err != nil || exists {
		return err
	}
	n := strconv.Itoa(int(w))
	for _, sql := range []string{
		`SET LOCAL lock_timeout = '5s'`,
		`CREATE TABLE ` + name + ` (LIKE dlq_entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
			CONSTRAINT ` + name + `_part CHECK (part = ` + n + `),
			CONSTRAINT ` + name + `_pkey PRIMARY KEY (seq),
			CONSTRAINT ` + name + `_identity_key UNIQUE (dlq, identity),
			CONSTRAINT ` + name + `_id_key UNIQUE (dlq, id))`,
		`ALTER TABLE dlq_entries ATTACH PARTITION ` + name + ` FOR VALUES IN (` + n + `)`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// maintainInBackground runs Maintain every maintainEvery until ctx ends.
func (s *Store) maintainInBackground(ctx context.Context) {
	defer close(s.maintained)
	t := time.NewTicker(maintainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Maintain(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("pgstore: partition maintenance failed; retrying later", "err", err, "in", maintainEvery)
		}
	}
}

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
// in dlq_keys, so that a redelivery of one is still a duplicate.
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
				RETURNING seq)
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
	tag, err := tx.Exec(ctx, `UPDATE dlq_entries SET part = 0 WHERE part = `+strconv.Itoa(int(w))+` AND seq IN (
		SELECT seq FROM `+name+` e WHERE `+mustStay+`)`, names, befores)
	if err != nil {
		return fmt.Errorf("keep entries: %w", err)
	}
	out.Kept += int(tag.RowsAffected())
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

// quoteTime is t as an SQL timestamptz literal.
func quoteTime(t time.Time) string {
	return `'` + t.UTC().Format("2006-01-02 15:04:05.999999") + `+00'`
}
