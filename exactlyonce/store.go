package exactlyonce

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Store. Pool is required; the zero value of every
// other field is its default.
type Config struct {
	// Pool is the application's database: the inbox and the outbox live
	// in it, beside the data its handlers change, so that one transaction
	// covers the effects and their records. Required.
	Pool *pgxpool.Pool
	// Schema holds the tables (Migrate creates it when missing): a
	// lower-case identifier (letters, digits, underscores; at most 63).
	// Default "": the connection's search_path (normally public).
	Schema string
	// InboxRetention is how long the inbox remembers a handled message: a
	// delivery of the same message later than that runs the handler again
	// (see docs/exactly-once.md on replays). Rounded up to whole days; at
	// least 24h. Default DefaultInboxRetention.
	InboxRetention time.Duration
	// StalledAfter is the age of the oldest unsent outbox message above
	// which the outbox reads as stalled (the metric redrive_outbox_stalled,
	// alert OutboxNotDraining). Default DefaultStalledAfter; >= 0.
	StalledAfter time.Duration
	// NoNotify leaves out the NOTIFY that Publish sends at commit to wake
	// the relays within milliseconds; they then find the messages by
	// polling (RelayConfig.PollInterval: set it short). Why: PostgreSQL
	// serialises the commits of transactions that NOTIFY (a database-wide
	// lock held through the commit's WAL flush), which caps the commit
	// rate of many concurrent writers (BENCHMARKS.md). Default false.
	NoNotify bool
	// Registerer receives the metrics of the inbox, the relay and the
	// tables (sampled when scraped); nil = no metrics.
	Registerer prometheus.Registerer
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the inbox's days and retention; default
	// time.Now.
	Now func() time.Time
}

// DefaultInboxRetention is Config.InboxRetention's default.
const DefaultInboxRetention = 7 * 24 * time.Hour

// DefaultStalledAfter is Config.StalledAfter's default.
const DefaultStalledAfter = time.Minute

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("exactlyonce: Config.Pool: required")
	case c.Schema != "" && !schemaName.MatchString(c.Schema):
		return fmt.Errorf("exactlyonce: Config.Schema: must be a lower-case identifier, got %q", c.Schema)
	case c.InboxRetention != 0 && c.InboxRetention < 24*time.Hour:
		return fmt.Errorf("exactlyonce: Config.InboxRetention: must be at least 24h, got %s", c.InboxRetention)
	case c.StalledAfter < 0:
		return fmt.Errorf("exactlyonce: Config.StalledAfter: must be >= 0, got %s", c.StalledAfter)
	}
	return nil
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Store is the inbox and the outbox tables of one schema of the
// application's database. It is safe for concurrent use.
type Store struct {
	cfg   Config
	pool  *pgxpool.Pool
	log   *slog.Logger
	now   func() time.Time
	days  int32 // InboxRetention in whole days
	sql   statements
	locks lockSpace
	parts partitionSet // the inbox's day partitions
	m     *metrics
}

// New validates cfg and registers the metrics; it does not touch the
// database (Migrate does).
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.InboxRetention == 0 {
		cfg.InboxRetention = DefaultInboxRetention
	}
	if cfg.StalledAfter == 0 {
		cfg.StalledAfter = DefaultStalledAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{cfg: cfg, pool: cfg.Pool, log: cfg.Logger, now: cfg.Now,
		days: int32((cfg.InboxRetention + 24*time.Hour - 1) / (24 * time.Hour)),
		sql:  newStatements(cfg.Schema), locks: newLockSpace(cfg.Schema)}
	m, err := newMetrics(cfg.Registerer, s)
	if err != nil {
		return nil, err
	}
	s.m = m
	return s, nil
}

// Schema is the schema of the tables ("" = the search_path's).
func (s *Store) Schema() string { return s.cfg.Schema }

// statements are the SQL texts of one schema.
type statements struct {
	inbox, inboxDay0, outbox, parked string // qualified table names
	claim                            string
	park                             string
	write                            string
	fetch                            string
	remove                           string
	channel                          string // the NOTIFY channel of commits to the outbox
	sample                           string
}

func newStatements(schema string) statements {
	q := func(table string) string {
		if schema == "" {
			return table
		}
		return pgx.Identifier{schema, table}.Sanitize()
	}
	st := statements{inbox: q("redrive_inbox"), inboxDay0: q("redrive_inbox_d0"), outbox: q("redrive_outbox"), parked: q("redrive_outbox_parked")}
	// The lock is taken by the statement before (Store.claim), so that
	// this one's snapshot sees what the lock's holder committed. ON
	// CONFLICT covers the partition written to ($3); the NOT EXISTS reads
	// every other day partition up to tomorrow's ($4 is today: a day of
	// clock skew between processes; the partitions made ahead are empty),
	// pruned at execution (day <> $3 leaves out the one written to: an
	// index probe fewer per message).
	st.claim = `INSERT INTO ` + st.inbox + ` (worker, key, day)
		SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM ` + st.inbox + ` WHERE worker = $1 AND key = $2 AND day <= $4 + 1 AND day <> $3)
		ON CONFLICT DO NOTHING`
	st.write = `INSERT INTO ` + st.outbox + ` (shard, topic, key, id, value, headers, ts)
		SELECT u.shard, $1, u.key, u.id, u.value, u.headers, u.ts
		FROM unnest($2::smallint[], $3::bytea[], $4::text[], $5::bytea[], $6::bytea[], $7::timestamptz[])
			WITH ORDINALITY AS u(shard, key, id, value, headers, ts, n)
		ORDER BY u.n`
	// Up to $4 rows in seq order, cut after the row that brings their
	// size past $5 bytes (the first row whatever its size); the caller
	// tells a batch cut by size by its size. The values of the rows cut
	// are not read (their TOAST pointers go no further than the filter).
	// The running sum in ROWS mode, no count(*) OVER () (which kept
	// every row of the batch before the first went out), and the seqs in
	// flight (the batch being published, which the scan passes first) in
	// a hashed NOT IN, where NOT (seq = ANY($3)) compared each row with
	// each of them: 0.6–0.8 ms for 500 rows of 1 KiB past 500 in flight
	// (generic plan), where the first form took 1.5–2.3.
	st.fetch = `SELECT seq, topic, key, id, value, headers, ts, written_at FROM (
			SELECT *, sum(size) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS upto FROM (
				SELECT seq, topic, key, id, value, headers, ts, written_at,
					octet_length(value) + coalesce(octet_length(headers), 0) + coalesce(octet_length(key), 0) AS size
				FROM ` + st.outbox + `
				WHERE shard = ANY($1) AND NOT (topic = ANY($2)) AND seq NOT IN (SELECT unnest($3::bigint[])) ORDER BY seq LIMIT $4) a) b
		WHERE upto - size < $5 ORDER BY seq`
	st.remove = `DELETE FROM ` + st.outbox + ` WHERE seq = ANY($1)`
	st.park = `WITH moved AS (DELETE FROM ` + st.outbox + ` WHERE seq = $1
			RETURNING seq, shard, topic, key, id, value, headers, ts, written_at)
		INSERT INTO ` + st.parked + ` (seq, shard, topic, key, id, value, headers, ts, written_at, error)
		SELECT seq, shard, topic, key, id, value, headers, ts, written_at, $2 FROM moved`
	st.channel = "redrive_outbox"
	if schema != "" {
		st.channel += "_" + schema
	}
	st.sample = `SELECT
		(SELECT count(*) FROM ` + st.outbox + `),
		(SELECT extract(epoch FROM clock_timestamp() - written_at)::float8 FROM ` + st.outbox + ` ORDER BY seq LIMIT 1),
		(SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::float8
			FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1))`
	return st
}
