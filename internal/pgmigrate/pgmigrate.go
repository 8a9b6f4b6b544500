// Package pgmigrate is what redrive's PostgreSQL stores share to migrate
// their schemas: versioned migration files embedded in the binary
// ("NNNN_name.sql") and the session advisory lock under which one process
// at a time applies them. Each store keeps its own version table and
// applies its migrations itself (dlq/pgstore, exactlyonce).
package pgmigrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Migration is one schema version.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the migrations matching pattern in fsys (files named
// NNNN_name.sql), sorted by version; a badly named file or two of one
// version is an error.
func Load(fsys fs.FS, pattern string) ([]Migration, error) {
	paths, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, p := range paths {
		num, name, ok := strings.Cut(strings.TrimSuffix(path.Base(p), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", p)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations of version %d", out[i].Version)
		}
	}
	return out, nil
}

// Latest is the highest version of ms, 0 when there is none.
func Latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Lock takes the session advisory lock named key (hashtextextended(key,
// 0)) on conn, trying every LockPoll until ctx ends: a session waiting in
// pg_advisory_lock cannot be told to give up, and would be a transaction
// that a CREATE INDEX CONCURRENTLY of the process migrating waits for (a
// deadlock).
func Lock(ctx context.Context, conn *pgx.Conn, key string) error {
	t := time.NewTicker(LockPoll)
	defer t.Stop()
	for {
		var locked bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, key).Scan(&locked); err != nil {
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

// Unlock releases Lock's lock, even when ctx has ended; a failed unlock (a
// lost connection) ends with the session.
func Unlock(ctx context.Context, conn *pgx.Conn, key string) {
	_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key)
}

// LockPoll is how often Lock tries the lock.
const LockPoll = 50 * time.Millisecond
