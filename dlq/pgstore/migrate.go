package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles are the schema versions, "NNNN_name.sql", applied in order.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema version.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations sorted by version.
func migrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, p := range paths {
		base := strings.TrimSuffix(path.Base(p), ".sql")
		num, name, ok := strings.Cut(base, "_")
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
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("two migrations of version %d", out[i].version)
		}
	}
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

// migrate brings the schema up to date in one transaction, under an
// advisory lock on the schema name, so that several instances starting at
// once apply each migration exactly once: the others wait, then find
// nothing left to do. It creates schema first when it is set.
func (s *Store) migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('redrive/dlq/schema_migrations/' || $1::text, 0))`, schema); err != nil {
		return fmt.Errorf("pgstore: migrate: lock: %w", err)
	}
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
		if done[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("pgstore: migrate: apply %04d_%s: %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return fmt.Errorf("pgstore: migrate: record %04d_%s: %w", m.version, m.name, err)
		}
		s.log.Info("pgstore: applied schema migration", "version", m.version, "name", m.name)
	}
	if known := ms[len(ms)-1].version; latest > known {
		s.log.Warn("pgstore: the database schema is newer than this binary; continuing", "schema_version", latest, "known_version", known)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: migrate: commit: %w", err)
	}
	return nil
}
