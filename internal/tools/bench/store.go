package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
)

// ScenarioStore is the scenario of `redrive bench store`: the PostgreSQL
// DLQ store at size (RunStore); it is not one of Run's.
const ScenarioStore = "store"

// Defaults of StoreConfig.
const (
	DefaultStoreEntries = 20_000
	DefaultStoreSamples = 100
	DefaultStoreBatch   = 500
	// DefaultStoreCopyEntries bounds the rows of the raw COPY reference.
	DefaultStoreCopyEntries = 1_000_000
	DefaultDatabaseURL      = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// StoreConfig configures RunStore.
type StoreConfig struct {
	// DatabaseURL is the PostgreSQL the schemas are made in; default
	// DefaultDatabaseURL.
	DatabaseURL string
	// Entries stored; default 20,000.
	Entries int
	// Batch is the entries of one Store.InsertBatch (the keeper's batch);
	// default 500.
	Batch int
	// CopyEntries are the rows of the raw COPY reference: the first
	// CopyEntries of the store's (at most Entries); default 1,000,000.
	CopyEntries int
	// Samples is how many times each read is timed; default 100.
	Samples int
	// Keep leaves the filled store's schema in place (its name is in
	// StoreReport.Schema) for a later run with Reuse; the raw COPY's
	// schema is dropped all the same.
	Keep bool
	// Reuse, when set, is the schema of an earlier run with Keep: nothing
	// is stored, the reads are timed on its entries and the schema is
	// left in place. Entries, Batch and CopyEntries are then ignored.
	Reuse string
	// Logger receives progress; default discards.
	Logger *slog.Logger
}

// WithDefaults returns c with zero fields set to the defaults.
func (c StoreConfig) WithDefaults() StoreConfig {
	if c.DatabaseURL == "" {
		c.DatabaseURL = DefaultDatabaseURL
	}
	if c.Entries == 0 {
		c.Entries = DefaultStoreEntries
	}
	if c.Batch == 0 {
		c.Batch = DefaultStoreBatch
	}
	if c.CopyEntries == 0 {
		c.CopyEntries = DefaultStoreCopyEntries
	}
	c.CopyEntries = min(c.CopyEntries, c.Entries)
	if c.Samples == 0 {
		c.Samples = DefaultStoreSamples
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field out of range, wrapped in
// ErrInvalidConfig.
func (c StoreConfig) Validate() error {
	switch {
	case c.Entries < 1000:
		return fmt.Errorf("%w: entries: %d is below 1000", ErrInvalidConfig, c.Entries)
	case c.Batch < 1 || c.Batch > 10_000:
		return fmt.Errorf("%w: batch: %d is not between 1 and 10000", ErrInvalidConfig, c.Batch)
	case c.Samples < 1:
		return fmt.Errorf("%w: samples: %d is not positive", ErrInvalidConfig, c.Samples)
	case c.CopyEntries < 1:
		return fmt.Errorf("%w: copy entries: %d is not positive", ErrInvalidConfig, c.CopyEntries)
	case c.Reuse != "" && !strings.HasPrefix(c.Reuse, "redrive_bench_"):
		return fmt.Errorf("%w: reuse: %q is not a schema of redrive bench store (redrive_bench_…)", ErrInvalidConfig, c.Reuse)
	}
	return nil
}

// StoreRead is the timing of one kind of read.
type StoreRead struct {
	Name     string
	Samples  int
	P50, P99 time.Duration
	// Target is the bound on p99 ("" when none).
	Target time.Duration
}

// StoreReport is what RunStore measured.
type StoreReport struct {
	// Schema is the store's schema, kept when StoreConfig.Keep or Reuse.
	Schema  string
	Kept    bool
	Entries int
	// InsertRate is Store.InsertBatch's entries/s over the first
	// CopyEntries entries, CopyRate a raw COPY's of the same rows into the
	// same (fresh) table; AllRate the store's over every entry.
	InsertRate, CopyRate, AllRate float64
	CopyEntries                   int
	// PayloadBytes is the payloads' total size.
	PayloadBytes int64
	// TableBytes is dlq_entries's heap with its TOAST, IndexBytes its
	// indexes.
	TableBytes, IndexBytes int64
	Reads                  []StoreRead
	// RSSBefore is this process's resident memory when the reads start,
	// RSSReads the most it had after any kind of read (the reads are those
	// of `redrive serve`'s console, API and DLQ gauges, in the same
	// process); 0 where /proc/self/status is not there.
	RSSBefore, RSSReads int64
}

// RunStore fills a fresh schema with cfg.Entries entries through
// Store.InsertBatch, copies the first cfg.CopyEntries of the same rows
// into a second fresh schema with a raw COPY (batch by batch, each right
// after the store's), gives the entries a mix of
// statuses, times the operator-facing reads and measures the table's size
// on disk. Every read's result is checked (a wrong result is an error,
// not a timing). Both schemas are dropped at the end, also on failure.
func RunStore(ctx context.Context, cfg StoreConfig) (*StoreReport, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Reuse != "" {
		return rereadStore(ctx, cfg)
	}
	run := "redrive_bench_" + strings.ToLower(broker.NewMessageID()[:10])
	storeSchema, copySchema := run+"_store", run+"_copy"
	if cfg.Keep {
		defer dropSchemas(cfg, copySchema)
	} else {
		defer dropSchemas(cfg, storeSchema, copySchema)
	}

	end := time.Now().UTC().Truncate(time.Hour)
	// The store's clock follows the arrivals while they are stored, so that
	// its week partitions are made as a month of them would have made them.
	clock := &storeClock{}
	clock.set(end.Add(-storeSpan))
	st, err := pgstore.Open(ctx, cfg.DatabaseURL, pgstore.Config{Schema: storeSchema, MaxConns: 4, Logger: cfg.Logger, Now: clock.now})
	if err != nil {
		return nil, fmt.Errorf("bench: store: %w", err)
	}
	defer st.Close()
	rep := &StoreReport{Schema: storeSchema, Kept: cfg.Keep, Entries: cfg.Entries, CopyEntries: cfg.CopyEntries}
	ref, err := pgstore.Open(ctx, cfg.DatabaseURL, pgstore.Config{Schema: copySchema, MaxConns: 1, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("bench: store: copy schema: %w", err)
	}
	ids, err := ingest(ctx, cfg, st, ref, clock, end, rep)
	clock.set(time.Time{})
	ref.Close()
	dropSchemas(cfg, copySchema)
	if err != nil {
		return nil, err
	}
	if err := shapeStatuses(ctx, cfg, st); err != nil {
		return nil, err
	}
	return rep, measureStore(ctx, cfg, st, ids, end, rep)
}

// rereadStore times the reads on the kept schema cfg.Reuse: its entries
// are counted, a sample of their ids read, the end of their arrivals
// found; nothing is written.
func rereadStore(ctx context.Context, cfg StoreConfig) (*StoreReport, error) {
	st, err := pgstore.Open(ctx, cfg.DatabaseURL, pgstore.Config{Schema: cfg.Reuse, MaxConns: 4, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("bench: store: reuse: %w", err)
	}
	defer st.Close()
	n, err := st.Count(ctx, dlq.Query{})
	if err != nil {
		return nil, fmt.Errorf("bench: store: reuse: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("bench: store: reuse: schema %q holds no entry", cfg.Reuse)
	}
	rep := &StoreReport{Schema: cfg.Reuse, Kept: true, Entries: int(n)}
	var last time.Time
	if err := st.Pool().QueryRow(ctx, `SELECT max(received_at) FROM dlq_entries`).Scan(&last); err != nil {
		return nil, fmt.Errorf("bench: store: reuse: last arrival: %w", err)
	}
	// storeRecord spreads arrivals over [end-storeSpan, end), end on the hour.
	end := last.UTC().Truncate(time.Hour).Add(time.Hour)
	// A sample of ids from about 10,000 pages spread over the table.
	pct := min(100, 1e6/float64(n))
	rows, err := st.Pool().Query(ctx, fmt.Sprintf(`SELECT dlq || '/' || id FROM dlq_entries TABLESAMPLE SYSTEM (%g) LIMIT 10000`, pct))
	if err != nil {
		return nil, fmt.Errorf("bench: store: reuse: ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return nil, fmt.Errorf("bench: store: reuse: %d ids sampled: %v", len(ids), err)
	}
	return rep, measureStore(ctx, cfg, st, ids, end, rep)
}

// measureStore times the reads and measures the table on disk.
func measureStore(ctx context.Context, cfg StoreConfig, st *pgstore.Store, ids []string, end time.Time, rep *StoreReport) error {
	if err := measureReads(ctx, cfg, st, ids, end, rep); err != nil {
		return err
	}
	if err := st.Pool().QueryRow(ctx, `SELECT sum(pg_table_size(relid))::bigint, sum(pg_indexes_size(relid))::bigint FROM pg_partition_tree('dlq_entries')`).Scan(&rep.TableBytes, &rep.IndexBytes); err != nil {
		return fmt.Errorf("bench: store: size: %w", err)
	}
	return nil
}

// ingest stores every entry in batches and returns a sample of their ids.
// Each batch of the first cfg.CopyEntries is also written to ref's
// dlq_entries by a raw binary COPY (pgx CopyFrom) right after, so that both
// run under the same load: the reference.
func ingest(ctx context.Context, cfg StoreConfig, st, ref *pgstore.Store, clock *storeClock, end time.Time, rep *StoreReport) ([]string, error) {
	var ids []string
	every := max(cfg.Entries/10_000, 1)
	var spent, copying time.Duration // in InsertBatch and COPY: generating the entries is not timed
	batch := make([]dlq.Record, 0, cfg.Batch)
	cols := pgstore.InsertColumns()
	copied := 0
	week := int64(-1)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		start := time.Now()
		res, err := st.InsertBatch(ctx, batch)
		spent += time.Since(start)
		if err != nil {
			return fmt.Errorf("bench: store: insert: %w", err)
		}
		if copied < cfg.CopyEntries {
			rows := make([][]any, len(res))
			for i, r := range res {
				rows[i] = pgstore.InsertValues(r.Stored)
			}
			start := time.Now()
			if _, err := ref.Pool().CopyFrom(ctx, pgx.Identifier{"dlq_entries"}, cols, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("bench: store: copy: %w", err)
			}
			copying += time.Since(start)
			copied += len(rows)
		}
		for _, r := range res {
			if r.Err != nil || !r.Inserted {
				return fmt.Errorf("bench: store: insert %s: inserted %v, %v", r.Stored.Key(), r.Inserted, r.Err)
			}
		}
		batch = batch[:0]
		return nil
	}
	for i := range cfg.Entries {
		r := storeRecord(i, cfg.Entries, end)
		if w := r.ReceivedAt.UnixMilli() / weekMillis; w != week {
			// A new week: the store's hourly maintenance would have made
			// its partition (and the next ones) by now.
			if err := flush(); err != nil {
				return nil, err
			}
			clock.set(r.ReceivedAt)
			if err := st.Maintain(ctx); err != nil {
				return nil, fmt.Errorf("bench: store: %w", err)
			}
			week = w
		}
		rep.PayloadBytes += int64(len(r.Entry.OriginalValue))
		if i%every == 0 {
			ids = append(ids, r.DLQ+"/"+r.ID)
		}
		batch = append(batch, r)
		if len(batch) == cfg.Batch || i == cfg.Entries-1 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		if i+1 == cfg.CopyEntries {
			rep.InsertRate = float64(i+1) / spent.Seconds()
			rep.CopyRate = float64(copied) / copying.Seconds()
		}
		if (i+1)%100_000 == 0 {
			cfg.Logger.Info("bench: store: stored", "entries", i+1, "per_s", int(float64(i+1)/spent.Seconds()))
		}
	}
	rep.AllRate = float64(cfg.Entries) / spent.Seconds()
	n, err := st.Count(ctx, dlq.Query{})
	if err != nil || n != int64(cfg.Entries) {
		return nil, fmt.Errorf("bench: store: %d entries counted after storing %d: %v", n, cfg.Entries, err)
	}
	return ids, nil
}

// shapeStatuses gives the entries a realistic mix, through the table's
// triggers as a replay or discard would: 30 % replayed, 5 % discarded, the
// rest pending; then analyzes the table, as autovacuum would.
func shapeStatuses(ctx context.Context, cfg StoreConfig, st *pgstore.Store) error {
	const step = 200_000
	for from := int64(0); from < int64(cfg.Entries); from += step {
		if _, err := st.Pool().Exec(ctx, `UPDATE dlq_entries SET status = CASE WHEN seq % 20 < 6 THEN 'replayed' ELSE 'discarded' END,
				version = version + 1, status_by = 'bench'
			WHERE seq > $1 AND seq <= $2 AND seq % 20 < 7`, from, from+step); err != nil {
			return fmt.Errorf("bench: store: statuses: %w", err)
		}
	}
	if _, err := st.Pool().Exec(ctx, `VACUUM ANALYZE dlq_entries`); err != nil {
		return fmt.Errorf("bench: store: vacuum: %w", err)
	}
	return nil
}

// weekMillis is the span of the store's partitions (pgstore, schema 6).
const weekMillis = 7 * 24 * 3600 * 1000

// storeClock is the store's clock while RunStore fills it: the arrival
// time of the entries being stored; the zero time means time.Now.
type storeClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *storeClock) set(t time.Time) {
	c.mu.Lock()
	c.at = t
	c.mu.Unlock()
}

func (c *storeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return time.Now()
	}
	return c.at
}

// dropSchemas drops what RunStore made, whatever happened.
func dropSchemas(cfg StoreConfig, schemas ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		cfg.Logger.Error("bench: store: drop schemas", "schemas", schemas, "err", err)
		return
	}
	defer conn.Close(ctx)
	for _, s := range schemas {
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`); err != nil {
			cfg.Logger.Error("bench: store: drop schema", "schema", s, "err", err)
		}
	}
}

// timed runs fn cfg.Samples times and returns its p50 and p99.
func timed(ctx context.Context, cfg StoreConfig, name string, target time.Duration, fn func(rng *rand.Rand) error) (StoreRead, error) {
	rng := rand.New(rand.NewPCG(uint64(len(name)), 7))
	ds := make([]time.Duration, 0, cfg.Samples)
	for range cfg.Samples {
		if err := ctx.Err(); err != nil {
			return StoreRead{}, err
		}
		start := time.Now()
		if err := fn(rng); err != nil {
			return StoreRead{}, fmt.Errorf("bench: store: %s: %w", name, err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return StoreRead{Name: name, Samples: len(ds), P50: percentile(ds, 0.5), P99: percentile(ds, 0.99), Target: target}, nil
}

// errWrong marks a read whose result is not what the scenario stored.
var errWrong = errors.New("wrong result")

// Markdown writes the report as the tables `redrive bench store` prints.
func (r *StoreReport) Markdown(w io.Writer) error {
	var sb strings.Builder
	ratio := r.InsertRate / r.CopyRate
	met := "missed"
	if ratio >= 0.5 {
		met = "met"
	}
	if r.InsertRate == 0 {
		perM := float64(r.TableBytes+r.IndexBytes) / float64(r.Entries) * 1e6
		fmt.Fprintf(&sb, "| entries | table | indexes | disk per 1M entries |\n|--:|--:|--:|--:|\n| %d | %s | %s | %s |\n\n",
			r.Entries, bytesOf(float64(r.TableBytes)), bytesOf(float64(r.IndexBytes)), bytesOf(perM))
	} else {
		fmt.Fprintf(&sb, "| entries | payloads | table | indexes | disk per 1M entries | batch insert /s | raw COPY /s (first %d rows, same batches) | ratio | target | met | insert /s (all) |\n", r.CopyEntries)
		sb.WriteString("|--:|--:|--:|--:|--:|--:|--:|--:|---|---|--:|\n")
		perM := float64(r.TableBytes+r.IndexBytes) / float64(r.Entries) * 1e6
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %.0f | %.0f | %.2f | ≥ 0.50 × COPY | %s | %.0f |\n\n",
			r.Entries, bytesOf(float64(r.PayloadBytes)), bytesOf(float64(r.TableBytes)), bytesOf(float64(r.IndexBytes)), bytesOf(perM),
			r.InsertRate, r.CopyRate, ratio, met, r.AllRate)
	}
	sb.WriteString("| read | samples | p50 | p99 | target | met |\n|---|--:|--:|--:|---|---|\n")
	for _, rd := range r.Reads {
		target, met := "", ""
		if rd.Target > 0 {
			target, met = "p99 ≤ "+dur(rd.Target), "missed"
			if rd.P99 <= rd.Target {
				met = "met"
			}
		}
		fmt.Fprintf(&sb, "| %s | %d | %s | %s | %s | %s |\n", rd.Name, rd.Samples, dur(rd.P50), dur(rd.P99), target, met)
	}
	if r.RSSBefore > 0 {
		fmt.Fprintf(&sb, "\nResident memory of the reading process: %s before the reads, at most %s after any of them.\n",
			bytesOf(float64(r.RSSBefore)), bytesOf(float64(r.RSSReads)))
	}
	if r.Kept {
		fmt.Fprintf(&sb, "\nThe store's schema %s is kept: `redrive bench store --reuse %s` times the reads again; `DROP SCHEMA %s CASCADE` removes it.\n", r.Schema, r.Schema, r.Schema)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// bytesOf renders a size in MiB or GiB.
func bytesOf(b float64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", b/(1<<20))
}
