package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/dlq"
)

// insertCols are the columns InsertBatch writes, in the order of the
// arrays of insertSQL.
const insertCols = `dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at,
	message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers, original_wire,
	error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source, first_failure_at, last_failure_at,
	fingerprint, part`

// insertFrom returns the statement that inserts the rows of src (a
// SELECT of insertCols, timeless and ord, their order in the batch),
// skipping those whose identity the DLQ holds or whose id its partitions
// 0 and week(id) hold, and a record of the batch whose identity an
// earlier one has. The identity is first claimed in dlq_keys (the
// partitions only know their own: (dlq, identity) is unique per DLQ
// through dlq_keys, and partition 0's own index for the entries of schema
// version 5), then, for an id without time (timeless: its partition is
// its received week's, which the id does not tell), the id is claimed in
// dlq_id_parts with its partition (unique per DLQ there, whichever
// partition holds it), then the entry is inserted, in dlq order (so that
// concurrent batches claim keys in the same order); the summary trigger
// counts the inserted rows in the same statement. It returns a row (dlq,
// identity, id) per claimed identity, id NULL when the entry was not
// inserted after all (its id is taken: the key is an orphan that the
// caller deletes). An id claimed in dlq_id_parts is always inserted: its
// identity is claimed and no partition holds the id (a second record of
// the batch with the same id in the same partition is skipped by that
// partition's (dlq, id) index, its id recorded once with that partition).
func insertFrom(src string) string {
	return `WITH src AS MATERIALIZED (` + src + `),
	first AS (SELECT DISTINCT ON (dlq, identity) * FROM src ORDER BY dlq, identity, ord),
	keys AS (
		INSERT INTO dlq_keys (dlq, identity)
		SELECT f.dlq, f.identity FROM first f
		WHERE NOT EXISTS (SELECT 1 FROM dlq_entries e WHERE e.part = 0 AND e.dlq = f.dlq AND e.identity = f.identity)
			AND NOT EXISTS (SELECT 1 FROM dlq_entries e WHERE e.part = ANY (ARRAY[0, f.part]) AND e.dlq = f.dlq AND e.id = f.id)
		ORDER BY f.dlq, f.identity
		ON CONFLICT DO NOTHING
		RETURNING dlq, identity),
	idparts AS (
		INSERT INTO dlq_id_parts (dlq, id, part)
		SELECT f.dlq, f.id, f.part FROM first f JOIN keys k ON k.dlq = f.dlq AND k.identity = f.identity
		WHERE f.timeless
		ORDER BY f.dlq, f.id, f.ord
		ON CONFLICT DO NOTHING
		RETURNING dlq, id, part),
	ins AS (
		INSERT INTO dlq_entries (` + insertCols + `)
		SELECT ` + prefixed("f.", insertCols) + ` FROM first f JOIN keys k ON k.dlq = f.dlq AND k.identity = f.identity
		WHERE NOT f.timeless OR EXISTS (SELECT 1 FROM idparts p WHERE p.dlq = f.dlq AND p.id = f.id AND p.part = f.part)
		ORDER BY f.ord
		ON CONFLICT DO NOTHING
		RETURNING dlq, id, identity)
	SELECT k.dlq, k.identity, i.id FROM keys k LEFT JOIN ins i ON i.dlq = k.dlq AND i.identity = k.identity`
}

// prefixed returns the comma-separated columns of list, each prefixed.
func prefixed(prefix, list string) string {
	cols := strings.Split(list, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// insertSQL inserts a batch from one array per column (unnest keeps their
// order, so seq follows the batch): see insertFrom.
var insertSQL = insertFrom(`SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[], $9::bigint[], $10::timestamptz[],
		$11::text[], $12::text[], $13::integer[], $14::bigint[], $15::bytea[], $16::bytea[], $17::bytea[], $18::bytea[],
		$19::text[], $20::text[], $21::text[], $22::text[], $23::integer[], $24::text[], $25::text[], $26::text[], $27::timestamptz[], $28::timestamptz[],
		$29::text[], $30::integer[], $31::boolean[]) WITH ORDINALITY AS u(` + insertCols + `, timeless, ord)`)

// copySQL inserts the batch copied into the staging table, in the order
// it was copied: see insertFrom.
var copySQL = insertFrom(`SELECT ` + insertCols + `, timeless, row_number() OVER (ORDER BY ctid) AS ord FROM dlq_ingest_v7`)

// deleteOrphanKeys deletes the keys of dlq_keys that an insert claimed
// for entries it did not insert ($1, $2: dlq and identity arrays).
const deleteOrphanKeys = `DELETE FROM dlq_keys k USING unnest($1::text[], $2::text[]) AS o(dlq, identity)
	WHERE k.dlq = o.dlq AND k.identity = o.identity
		AND NOT EXISTS (SELECT 1 FROM dlq_entries e WHERE e.dlq = k.dlq AND e.identity = k.identity)
		AND NOT EXISTS (SELECT 1 FROM dlq_entries_archive a WHERE a.dlq = k.dlq AND a.identity = k.identity)`

// Insert implements dlq.Store: a batch of one.
func (s *Store) Insert(ctx context.Context, r dlq.Record) (dlq.Record, bool, error) {
	res, err := s.InsertBatch(ctx, []dlq.Record{r})
	if err != nil {
		return dlq.Record{}, false, err
	}
	return res[0].Stored, res[0].Inserted, res[0].Err
}

// ident is a record's identity within its DLQ.
type ident struct{ dlq, identity string }

// InsertBatch implements dlq.Store. The archive is checked first (one
// query for the batch); the others are inserted by one multi-row INSERT …
// ON CONFLICT DO NOTHING on the unique (dlq, identity) and (dlq, id) keys,
// so that redeliveries, also concurrent ones, store one row; the records it
// skipped are read back (one query) to tell a duplicate from an id
// conflict. When the database refuses the statement because of a row (an
// error it reports, not a lost connection), the batch is split in halves
// until the refused record is alone: the others are stored and it gets the
// error.
func (s *Store) InsertBatch(ctx context.Context, rs []dlq.Record) ([]dlq.InsertResult, error) {
	out := make([]dlq.InsertResult, len(rs))
	now := s.now()
	todo := make([]int, 0, len(rs))
	for i, r := range rs {
		p, err := r.PrepareInsert(now)
		if err != nil {
			out[i].Err = fmt.Errorf("pgstore: insert: %w", err)
			continue
		}
		out[i].Stored = p
		todo = append(todo, i)
	}
	if len(todo) == 0 {
		return out, nil
	}
	if err := s.checkArchive(ctx, out, &todo); err != nil {
		return nil, err
	}
	if err := s.insertRows(ctx, out, todo); err != nil {
		return nil, err
	}
	return out, nil
}

// checkArchive settles the records of todo whose identity or id the
// archive holds, and removes them from todo.
func (s *Store) checkArchive(ctx context.Context, out []dlq.InsertResult, todo *[]int) error {
	dlqs, idents, ids := make([]string, len(*todo)), make([]string, len(*todo)), make([]string, len(*todo))
	for j, i := range *todo {
		r := out[i].Stored
		dlqs[j], idents[j], ids[j] = r.DLQ, r.Identity, r.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+cols(true, whole)+` FROM dlq_entries_archive
			WHERE (dlq, identity) IN (SELECT * FROM unnest($1::text[], $2::text[]))
		UNION ALL SELECT `+cols(true, whole)+` FROM dlq_entries_archive
			WHERE (dlq, id) IN (SELECT * FROM unnest($1::text[], $3::text[]))`, dlqs, idents, ids)
	if err != nil {
		return fmt.Errorf("pgstore: insert %d entries: check archive: %w", len(*todo), err)
	}
	byIdentity, byID := map[ident]dlq.Record{}, map[ident]dlq.Record{}
	for rows.Next() {
		_, r, err := scanRecord(rows, whole)
		if err != nil {
			rows.Close()
			return fmt.Errorf("pgstore: insert %d entries: check archive: %w", len(*todo), err)
		}
		byIdentity[ident{r.DLQ, r.Identity}] = r
		byID[ident{r.DLQ, r.ID}] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgstore: insert %d entries: check archive: %w", len(*todo), err)
	}
	if len(byIdentity) == 0 {
		return nil
	}
	left := (*todo)[:0]
	var found []int
	for _, i := range *todo {
		r := out[i].Stored
		if old, ok := byIdentity[ident{r.DLQ, r.Identity}]; ok {
			out[i].Stored = old
			found = append(found, i)
		} else if _, ok := byID[ident{r.DLQ, r.ID}]; ok {
			out[i] = dlq.InsertResult{Err: fmt.Errorf("pgstore: insert entry %q: %w (archived)", r.Key(), dlq.ErrIDConflict)}
		} else {
			left = append(left, i)
		}
	}
	*todo = left
	return s.fillExisting(ctx, out, found)
}

// copyMin is the smallest batch written through COPY and the staging
// table; smaller ones (a lone dead letter) take one multi-row statement,
// one round trip.
const copyMin = 4

// stagingTable is the connection's temporary table a batch is copied
// into before the INSERT … SELECT that skips duplicates: created on a
// connection the first time a batch finds it missing, emptied at every
// commit.
const stagingTable = `CREATE TEMPORARY TABLE IF NOT EXISTS dlq_ingest_v7 (
	dlq text, id text, identity text, broker text, severity text, status text, status_changed_at timestamptz, status_by text,
	version bigint, received_at timestamptz, message_id text, original_topic text, original_partition integer, original_offset bigint,
	original_key bytea, original_value bytea, original_headers bytea, original_wire bytea,
	error_class text, error_message text, stack_trace text, reason text, retry_count integer, worker text, worker_instance text, source text,
	first_failure_at timestamptz, last_failure_at timestamptz, fingerprint text, part integer, timeless boolean) ON COMMIT DELETE ROWS`

// insertStatement writes batch, skipping the rows whose identity or id
// the DLQ holds, and returns the ids of those it inserted by identity:
// small batches by insertSQL, larger ones by a binary COPY into
// dlq_ingest_v7 and copySQL from it, in one transaction (its rows in
// batch order, so that seq follows the batch). Each record goes to its
// week's partition (partOf) when the store knows it exists, else to
// partition 0; when one does not exist after all (archived meanwhile), the set of
// partitions is reloaded and the batch tried once more.
func (s *Store) insertStatement(ctx context.Context, batch []dlq.Record) (map[ident]string, error) {
	inserted, err := s.insertOnce(ctx, batch)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.Contains(pgErr.Message, "no partition") { // check_violation
		if err := s.refreshPartitions(ctx); err != nil {
			return nil, err
		}
		inserted, err = s.insertOnce(ctx, batch)
	}
	return inserted, err
}

// insertOnce is one try of insertStatement.
func (s *Store) insertOnce(ctx context.Context, batch []dlq.Record) (map[ident]string, error) {
	parts := make([]int32, len(batch))
	for i, r := range batch {
		parts[i] = s.partOf(r)
	}
	inserted := map[ident]string{}
	var orphans []ident
	var d, identity string
	var id *string
	collect := func() error {
		if id == nil {
			orphans = append(orphans, ident{d, identity})
		} else {
			inserted[ident{d, identity}] = *id
		}
		return nil
	}
	if len(batch) < copyMin {
		rows, err := s.pool.Query(ctx, insertSQL, batchArgs(batch, parts)...)
		if err == nil {
			_, err = pgx.ForEachRow(rows, []any{&d, &identity, &id}, collect)
		}
		if err == nil && len(orphans) > 0 {
			_, err = s.pool.Exec(ctx, deleteOrphanKeys, orphanArgs(orphans)...)
		}
		return inserted, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	err = copyBatch(ctx, conn.Conn(), batch, parts, collect, &orphans, &d, &identity, &id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" && strings.Contains(pgErr.Message, "dlq_ingest_v7") { // undefined_table
		if _, err := conn.Exec(ctx, stagingTable); err != nil {
			return nil, fmt.Errorf("create the staging table: %w", err)
		}
		clear(inserted)
		orphans = orphans[:0]
		err = copyBatch(ctx, conn.Conn(), batch, parts, collect, &orphans, &d, &identity, &id)
	}
	return inserted, err
}

// orphanArgs are the arguments of deleteOrphanKeys.
func orphanArgs(orphans []ident) []any {
	dlqs, idents := make([]string, len(orphans)), make([]string, len(orphans))
	for i, o := range orphans {
		dlqs[i], idents[i] = o.dlq, o.identity
	}
	return []any{dlqs, idents}
}

// copyBatch copies batch (to partitions parts) into dlq_ingest_v7 and
// inserts it from there, in one transaction, calling collect with each
// claimed identity's row (dlq, identity, id) scanned into dest, and
// deleting the orphans collect gathered in the same transaction.
func copyBatch(ctx context.Context, conn *pgx.Conn, batch []dlq.Record, parts []int32, collect func() error, orphans *[]ident, dest ...any) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"dlq_ingest_v7"}, stagingColumns(), pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
		return stagingValues(batch[i], parts[i]), nil
	})); err != nil {
		return err
	}
	// Planned at each batch (pgx would prepare copySQL once, and a
	// statement without parameters keeps its first plan: made when the
	// partitions were empty, it scanned them whole for every batch as
	// they grew).
	rows, err := tx.Query(ctx, copySQL, pgx.QueryExecModeExec)
	if err != nil {
		return err
	}
	if _, err := pgx.ForEachRow(rows, dest, collect); err != nil {
		return err
	}
	if len(*orphans) > 0 {
		if _, err := tx.Exec(ctx, deleteOrphanKeys, orphanArgs(*orphans)...); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// insertRows inserts the records todo of out, splitting the batch around a
// record the database refuses.
func (s *Store) insertRows(ctx context.Context, out []dlq.InsertResult, todo []int) error {
	batch := make([]dlq.Record, len(todo))
	for j, i := range todo {
		batch[j] = out[i].Stored
	}
	inserted, err := s.insertStatement(ctx, batch)
	var pgErr *pgconn.PgError
	switch {
	case err != nil && errors.As(err, &pgErr) && ctx.Err() == nil:
		// The database refused a row (the statement, atomic, stored
		// nothing): split until it is alone.
		if len(todo) == 1 {
			out[todo[0]] = dlq.InsertResult{Err: fmt.Errorf("pgstore: insert entry %q: %w", out[todo[0]].Stored.Key(), err)}
			return nil
		}
		half := len(todo) / 2
		if err := s.insertRows(ctx, out, todo[:half]); err != nil {
			return err
		}
		return s.insertRows(ctx, out, todo[half:])
	case err != nil:
		return fmt.Errorf("pgstore: insert %d entries: %w", len(todo), err)
	}
	var skipped []int
	for _, i := range todo {
		r := out[i].Stored
		if id, ok := inserted[ident{r.DLQ, r.Identity}]; ok && id == r.ID {
			out[i].Inserted = true
			delete(inserted, ident{r.DLQ, r.Identity}) // a second record of this identity in the batch is a duplicate
			continue
		}
		skipped = append(skipped, i)
	}
	if len(skipped) == 0 {
		return nil
	}
	return s.readExisting(ctx, out, skipped)
}

// readExisting settles the records of out the insert skipped: the record
// stored under their identity, or ErrIDConflict when their id is another
// identity's.
func (s *Store) readExisting(ctx context.Context, out []dlq.InsertResult, skipped []int) error {
	dlqs, idents := make([]string, len(skipped)), make([]string, len(skipped))
	for j, i := range skipped {
		dlqs[j], idents[j] = out[i].Stored.DLQ, out[i].Stored.Identity
	}
	rows, err := s.pool.Query(ctx, `SELECT `+cols(false, whole)+` FROM dlq_entries
		WHERE (dlq, identity) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, dlqs, idents)
	if err != nil {
		return fmt.Errorf("pgstore: insert %d entries: read existing: %w", len(skipped), err)
	}
	existing := map[ident]dlq.Record{}
	for rows.Next() {
		_, r, err := scanRecord(rows, whole)
		if err != nil {
			rows.Close()
			return fmt.Errorf("pgstore: insert %d entries: read existing: %w", len(skipped), err)
		}
		existing[ident{r.DLQ, r.Identity}] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgstore: insert %d entries: read existing: %w", len(skipped), err)
	}
	var found []int
	for _, i := range skipped {
		r := out[i].Stored
		if old, ok := existing[ident{r.DLQ, r.Identity}]; ok {
			out[i].Stored = old
			found = append(found, i)
			continue
		}
		out[i] = dlq.InsertResult{Err: fmt.Errorf("pgstore: insert entry %q: %w", r.Key(), dlq.ErrIDConflict)}
	}
	return s.fillExisting(ctx, out, found)
}

// fillExisting reads the large values of the existing records found of
// out.
func (s *Store) fillExisting(ctx context.Context, out []dlq.InsertResult, found []int) error {
	for _, i := range found {
		recs := []dlq.Record{out[i].Stored}
		if err := fillValues(ctx, s.pool, recs); err != nil {
			return fmt.Errorf("pgstore: insert entry %q: read existing: %w", recs[0].Key(), err)
		}
		out[i].Stored = recs[0]
	}
	return nil
}
