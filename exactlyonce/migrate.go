package exactlyonce

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// migrationFiles are the schema versions, "NNNN_name.sql", applied in
// order, recorded in redrive_effects_migrations (not schema_migrations:
// in the application's database that name is often another tool's).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, p := range paths {
		num, name, ok := strings.Cut(strings.TrimSuffix(path.Base(p), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", p)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// SchemaVersion is the latest schema version this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
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
func (s *Store) migrate(ctx context.Context, ms []migration) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	conn := pc.Conn()
	if err := migrationLock(ctx, conn, s.cfg.Schema); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() {
		// A failed unlock (a lost connection) ends with the session.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('redrive/exactlyonce/migrations/' || $1::text, 0))`, s.cfg.Schema)
	}()
	return s.apply(ctx, conn, ms)
}

// apply runs the migrations not applied yet in one transaction.
func (s *Store) apply(ctx context.Context, conn *pgx.Conn, ms []migration) error {
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
		if slices.Contains(applied, int32(m.version)) {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("apply %04d_%s: %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO redrive_effects_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return fmt.Errorf("record %04d_%s: %w", m.version, m.name, err)
		}
		s.log.Info("exactlyonce: applied schema migration", "schema", s.cfg.Schema, "version", m.version, "name", m.name)
	}
	if known := ms[len(ms)-1].version; latest > known {
		s.log.Warn("exactlyonce: the database schema is newer than this binary; continuing", "schema_version", latest, "known_version", known)
	}
	return tx.Commit(ctx)
}

// migrationLock takes the session's advisory lock of schema's migrations,
// trying every lockPoll (a session waiting in pg_advisory_lock cannot be
// told to give up when ctx ends).
func migrationLock(ctx context.Context, conn *pgx.Conn, schema string) error {
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		var locked bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('redrive/exactlyonce/migrations/' || $1::text, 0))`, schema).Scan(&locked); err != nil {
			return err
		}
		if locked {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// lockPoll is how often migrationLock tries the lock.
const lockPoll = 50 * time.Millisecond
