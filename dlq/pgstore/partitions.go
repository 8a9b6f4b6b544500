package pgstore

import (
	"context"
	"errors"
	"fmt"
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
// whose id was made by dlq.NewID in week N since the Unix epoch and, from
// version 7 (migrations/0007_id_parts.sql), those of an id without time
// (Kafka's) received in week N, whose part dlq_id_parts records.

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
// ids may be in (0, their weeks and the recorded parts of those without
// time: recordedParts), with the weeks as literals, so that PostgreSQL
// reads those only.
func idsParts(ids []string, recorded []int32) string {
	var b strings.Builder
	b.WriteString("part IN (0")
	seen := map[int32]bool{0: true}
	add := func(w int32) {
		if !seen[w] {
			seen[w] = true
			b.WriteString(", " + strconv.Itoa(int(w)))
		}
	}
	for _, id := range ids {
		add(idWeek(id))
	}
	for _, w := range recorded {
		add(w)
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

// partOf is the partition an insert puts r in: its week's when that
// partition exists, else 0. Its week is its id's, or, for an id without
// time (Kafka's, or any not made by dlq.NewID), the week it was received
// in (the insert records its part in dlq_id_parts).
func (s *Store) partOf(r dlq.Record) int32 {
	w := idWeek(r.ID)
	if w == 0 {
		w = timeWeek(r.ReceivedAt)
	}
	if w > 0 && s.parts.has(w) {
		return w
	}
	return 0
}

// idPart returns the partition besides 0 that the entry id of dlqName
// may be in: its id's week, without a query, or, for an id without time,
// the part recorded in dlq_id_parts (0 when none: an entry stored before
// schema version 7 is in partition 0).
func idPart(ctx context.Context, q querier, dlqName, id string) (int32, error) {
	if w := idWeek(id); w > 0 {
		return w, nil
	}
	var p int32
	err := q.QueryRow(ctx, `SELECT part FROM dlq_id_parts WHERE dlq = $1 AND id = $2`, dlqName, id).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return p, err
}

// recordedParts returns the parts recorded in dlq_id_parts for the ids
// without time of ids (none, without a query, when every id has its
// time).
func recordedParts(ctx context.Context, q rowsQuerier, dlqName string, ids []string) ([]int32, error) {
	var timeless []string
	for _, id := range ids {
		if idWeek(id) == 0 {
			timeless = append(timeless, id)
		}
	}
	if len(timeless) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT DISTINCT part FROM dlq_id_parts WHERE dlq = $1 AND id = ANY($2)`, dlqName, timeless)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int32])
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
