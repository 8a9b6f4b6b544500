package exactlyonce

import (
	"context"
	"embed"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/internal/pgmigrate"
)

// migrationFiles are the schema versions, "NNNN_name.sql", applied in
// order, recorded in redrive_effects_migrations (not schema_migrations:
// in the application's database that name is often another tool's).
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

// Migrate creates the schema when it is set and missing, applies the
// migrations this binary knows and the database has not seen (in one
// transaction, under a session advisory lock on the schema's name, so
// that several processes starting at once apply each exactly once), then
// runs Maintain: the inbox's partitions of today and the next days exist
// when it returns. A database whose schema is newer is left as it is.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("exactlyonce: migrate: %w", err)
	}
	if err := s.migrate(ctx, ms); err != nil {
		return fmt.Errorf("exactlyonce: migrate: %w", err)
	}
	// After the lock's connection went back to the pool: Maintain takes
	// connections of its own.
	return s.Maintain(ctx)
}

// migrate applies ms under the migration lock, on one connection.
func (s *Store) migrate(ctx context.Context, ms []pgmigrate.Migration) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	conn := pc.Conn()
	lock := "redrive/exactlyonce/migrations/" + s.cfg.Schema
	if err := pgmigrate.Lock(ctx, conn, lock); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer pgmigrate.Unlock(ctx, conn, lock)
	return s.apply(ctx, conn, ms)
}

// apply runs the migrations not applied yet in one transaction.
func (s *Store) apply(ctx context.Context, conn *pgx.Conn, ms []pgmigrate.Migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if schema := s.cfg.Schema; schema != "" {
		id := pgx.Identifier{schema}.Sanitize()
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+id); err != nil {
			return fmt.Errorf("create schema %q: %w", schema, err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+id); err != nil {
			return fmt.Errorf("search_path %q: %w", schema, err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS redrive_effects_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create redrive_effects_migrations: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT version FROM redrive_effects_migrations`)
	if err != nil {
		return fmt.Errorf("read redrive_effects_migrations: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("read redrive_effects_migrations: %w", err)
	}
	latest := 0
	for _, v := range applied {
		latest = max(latest, int(v))
	}
	for _, m := range ms {
		if slices.Contains(applied, int32(m.Version)) {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO redrive_effects_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("record %04d_%s: %w", m.Version, m.Name, err)
		}
		s.log.Info("exactlyonce: applied schema migration", "schema", s.cfg.Schema, "version", m.Version, "name", m.Name)
	}
	if known := pgmigrate.Latest(ms); latest > known {
		s.log.Warn("exactlyonce: the database schema is newer than this binary; continuing", "schema_version", latest, "known_version", known)
	}
	return tx.Commit(ctx)
}
