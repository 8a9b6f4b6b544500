package pgstore

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/internal/pgmigrate"
)

// migrationFiles are the schema versions, "NNNN_name.sql", applied in order.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations sorted by version.
func migrations() ([]pgmigrate.Migration, error) {
	return pgmigrate.Load(migrationFiles, "migrations/*.sql")
}

// SchemaVersion is the latest schema version this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return pgmigrate.Latest(ms)
}

// prepares are the steps of migrations that run before their
// transaction, outside any (long work that must not hold the locks of the
// migration's DDL), by version. Each is idempotent.
var prepares = map[int]func(ctx context.Context, conn *pgx.Conn) error{
	6: prepartition,
	8: prepareReceivedCover,
}

// migrate brings the schema up to date under an advisory lock on the
// schema name, so that several instances starting at once apply each
// migration exactly once: the others wait, then find nothing left to do.
// The migrations are applied in one transaction, except that one with a
// prepare step (prepares) commits what precedes it, runs the step outside
// a transaction and starts another. It creates schema first when it is
// set.
func (s *Store) migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	lock := "redrive/dlq/schema_migrations/" + schema
	if err := pgmigrate.Lock(ctx, conn, lock); err != nil {
		return fmt.Errorf("pgstore: migrate: lock: %w", err)
	}
	defer pgmigrate.Unlock(ctx, conn, lock)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if schema != "" {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("pgstore: migrate: create schema %q: %w", schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("pgstore: migrate: create schema_migrations: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: read schema_migrations: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("pgstore: migrate: read schema_migrations: %w", err)
	}
	done := map[int]bool{}
	latest := 0
	for _, v := range applied {
		done[int(v)] = true
		latest = max(latest, int(v))
	}
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		if prepare := prepares[m.Version]; prepare != nil {
			if err := tx.Commit(ctx); err != nil {
				return fmt.Errorf("pgstore: migrate: commit before %04d_%s: %w", m.Version, m.Name, err)
			}
			if err := prepare(ctx, conn); err != nil {
				return fmt.Errorf("pgstore: migrate: prepare %04d_%s: %w", m.Version, m.Name, err)
			}
			if tx, err = conn.Begin(ctx); err != nil {
				return fmt.Errorf("pgstore: migrate: begin %04d_%s: %w", m.Version, m.Name, err)
			}
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("pgstore: migrate: apply %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("pgstore: migrate: record %04d_%s: %w", m.Version, m.Name, err)
		}
		s.log.Info("pgstore: applied schema migration", "version", m.Version, "name", m.Name)
	}
	if known := pgmigrate.Latest(ms); latest > known {
		s.log.Warn("pgstore: the database schema is newer than this binary; continuing", "schema_version", latest, "known_version", known)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: migrate: commit: %w", err)
	}
	return nil
}

// prepartition is the online part of migration 6: the column part
// (DEFAULT 0, which rewrites nothing) and a CHECK (part = 0) on
// dlq_entries and dlq_entries_archive, added NOT VALID (short locks) then
// validated (a scan that lets writers go on), so that the migration's
// transaction attaches the tables as partition 0 without scanning them.
func prepartition(ctx context.Context, conn *pgx.Conn) error {
	for _, table := range []string{"dlq_entries", "dlq_entries_archive"} {
		check := table + "_part_0"
		for _, sql := range []string{
			`ALTER TABLE ` + table + ` ADD COLUMN IF NOT EXISTS part integer NOT NULL DEFAULT 0`,
			`DO $$ BEGIN
				IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '` + check + `' AND conrelid = '` + table + `'::regclass) THEN
					ALTER TABLE ` + table + ` ADD CONSTRAINT ` + check + ` CHECK (part = 0) NOT VALID;
				END IF;
			END $$`,
			`ALTER TABLE ` + table + ` VALIDATE CONSTRAINT ` + check,
		} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
	}
	return nil
}

// prepareReceivedCover is the online part of migration 8: the covering
// (dlq, received_at) index of each partition of dlq_entries larger than
// concurrentlyAbove, built CONCURRENTLY (writers go on), for the
// migration's transaction to attach (which builds those of the smaller
// partitions, in a moment). An index left invalid by an interrupted
// build is dropped and built again.
func prepareReceivedCover(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT c.relname, x.indisvalid
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		LEFT JOIN pg_class ic ON ic.relname = c.relname || '_received_cover' AND ic.relnamespace = c.relnamespace
		LEFT JOIN pg_index x ON x.indexrelid = ic.oid
		WHERE i.inhparent = 'dlq_entries'::regclass AND pg_relation_size(c.oid) > $1 ORDER BY c.relname`, concurrentlyAbove)
	if err != nil {
		return err
	}
	type partition struct {
		name  string
		valid *bool // nil: no index yet
	}
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (partition, error) {
		var p partition
		err := row.Scan(&p.name, &p.valid)
		return p, err
	})
	if err != nil {
		return err
	}
	for _, p := range parts {
		index := pgx.Identifier{p.name + "_received_cover"}.Sanitize()
		if p.valid != nil && *p.valid {
			continue
		}
		if p.valid != nil {
			if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+index); err != nil {
				return fmt.Errorf("%s: drop invalid index: %w", p.name, err)
			}
		}
		if _, err := conn.Exec(ctx, `CREATE INDEX CONCURRENTLY IF NOT EXISTS `+index+` ON `+
			pgx.Identifier{p.name}.Sanitize()+` (dlq, received_at) INCLUDE (seq, status, fingerprint, part)`); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// concurrentlyAbove is the size of a partition (bytes) above which
// migration 8 builds its index before its transaction, CONCURRENTLY. Not
// below: CREATE INDEX CONCURRENTLY waits for every transaction of the
// database to end, twice, where building a small partition's index in
// the migration's transaction holds its writers for a few milliseconds.
var concurrentlyAbove int64 = 16 << 20
