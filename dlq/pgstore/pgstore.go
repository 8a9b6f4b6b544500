// Package pgstore is the production dlq.Store, on PostgreSQL through
// github.com/jackc/pgx/v5 (pgxpool).
//
// Open applies the schema migrations embedded in the binary
// (migrations/NNNN_name.sql, recorded in a schema_migrations table) in one
// transaction under an advisory lock, so several instances may start at
// once. Tables: dlq_entries (live records), dlq_entries_archive (records
// past retention), both partitioned by the week of the record's id, or
// of its arrival for an id without time (partitions.go), dlq_keys (the
// identities, unique per DLQ across partitions), dlq_id_parts (the
// partition of each entry of an id without time, which keeps such ids
// unique per DLQ), dlq_counts (entries by DLQ × status × severity, kept by
// triggers) and audit_log (every replay and discard, written in the
// transaction of the status change). Every connection has a temporary
// staging table, dlq_ingest_v7, that batches are copied into (InsertBatch).
// Every statement is parameterised.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/redact"
)

// Config configures a Store. The zero Config is the default.
type Config struct {
	// Schema, when set, holds the tables: it is created when missing and
	// is the search_path of every connection. Lower-case letters, digits
	// and underscores, starting with a letter or underscore, at most 63.
	// Default "": the URL's search_path (normally "public").
	Schema string
	// MaxConns bounds the pool. Default 0: pgxpool's default (or the URL's
	// pool_max_conns); >= 0.
	MaxConns int32
	// ConnectTimeout bounds Open's first connection when ctx has no
	// deadline. Default DefaultConnectTimeout; >= 0.
	ConnectTimeout time.Duration
	// Logger receives the background backfill's progress and failures.
	// Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of received and status-change times. Default
	// time.Now.
	Now func() time.Time
	// BackfillBatch is how many entries one transaction of the counts
	// backfill counts (see Store.Backfill). Default DefaultBackfillBatch;
	// >= 0.
	BackfillBatch int
	// BackfillManual, when set, leaves the backfill to calls of
	// Store.Backfill instead of running it in the background from Open.
	// Default false.
	BackfillManual bool
}

// DefaultConnectTimeout is Config.ConnectTimeout's default.
const DefaultConnectTimeout = 10 * time.Second

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	switch {
	case c.Schema != "" && !schemaName.MatchString(c.Schema):
		return fmt.Errorf("pgstore: Config.Schema: must be a lower-case identifier, got %q", c.Schema)
	case c.MaxConns < 0:
		return fmt.Errorf("pgstore: Config.MaxConns: must be >= 0, got %d", c.MaxConns)
	case c.ConnectTimeout < 0:
		return fmt.Errorf("pgstore: Config.ConnectTimeout: must be >= 0, got %s", c.ConnectTimeout)
	case c.BackfillBatch < 0:
		return fmt.Errorf("pgstore: Config.BackfillBatch: must be >= 0, got %d", c.BackfillBatch)
	}
	return nil
}

// Store is a dlq.Store on PostgreSQL.
type Store struct {
	pool      *pgxpool.Pool
	log       *slog.Logger
	now       func() time.Time
	batchSize int
	// stop ends the background backfill; backfilled is closed when it
	// returned (at once when it does not run).
	stop       context.CancelFunc
	backfilled chan struct{}
	// parts is the week partitions inserts may use; maintained is closed
	// when the background maintenance returned.
	parts      partitionSet
	maintained chan struct{}
	// counted is set once the backfill of schema version 3 is seen done:
	// dlq_counts alone then holds every count (countsSQL).
	counted atomic.Bool
}

var _ dlq.Store = (*Store)(nil)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at databaseURL (a postgres:// URL or a
// key=value DSN), applies the migrations and returns the store. An
// unreachable database is an error naming the URL with its password
// masked. An invalid opts is its Validate error.
func Open(ctx context.Context, databaseURL string, opts Config) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: database url %s: %w", MaskURL(databaseURL), errors.Unwrap(err))
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	// pgx prepares its statements; a generic plan (what PostgreSQL may
	// switch to after five runs) cannot see that one DLQ holds millions of
	// entries and another a few, or where a time window lies, and may walk
	// a whole DLQ for one page. Each run is planned for its values.
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	// No JIT compilation (unless the URL asks for it): the store's
	// statements read and write a page or a batch, but at millions of
	// entries their estimated cost passes jit_above_cost, and compiling
	// took 100-200 ms per statement: the batch insert fell from 5,000 to
	// 1,700 entries/s at 3 M entries, spent in LLVM.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	s := &Store{log: opts.Logger, now: opts.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if _, ok := ctx.Deadline(); !ok {
		timeout := opts.ConnectTimeout
		if timeout <= 0 {
			timeout = DefaultConnectTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect to %s: %w", MaskURL(databaseURL), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: connect to %s: %w", MaskURL(databaseURL), err)
	}
	if err := s.migrate(ctx, pool, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	s.pool = pool
	if err := s.Maintain(ctx); err != nil {
		s.log.Warn("pgstore: partition maintenance failed; entries of a missing week go to partition 0", "err", err)
		if err := s.refreshPartitions(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	s.batchSize = opts.BackfillBatch
	if s.batchSize <= 0 {
		s.batchSize = DefaultBackfillBatch
	}
	s.backfilled = make(chan struct{})
	bctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.maintained = make(chan struct{})
	go s.maintainInBackground(bctx)
	if opts.BackfillManual {
		close(s.backfilled)
	} else {
		go s.backfillInBackground(bctx)
	}
	return s, nil
}

// Pool returns the store's connection pool (for health checks).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops the background backfill and closes the pool.
func (s *Store) Close() error {
	s.stop()
	<-s.backfilled
	<-s.maintained
	s.pool.Close()
	return nil
}

// MaskURL hides the secrets of a database URL or DSN for logs and errors,
// whatever it parses to (see internal/redact).
func MaskURL(raw string) string { return redact.URL(raw) }
