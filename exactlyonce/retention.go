package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The inbox is partitioned by day (days since the Unix epoch, UTC) so that
// retention drops a day at a time, with no row-by-row delete: at a million
// messages a day, a week is 7 DROP TABLEs, not 7 million deletes and their
// vacuum. Partition 0 catches the rows of a day whose partition does not
// exist (the process did not see it yet); retention deletes its old rows.
// The outbox needs no retention: a row is deleted once the broker
// confirmed its message, and an unsent one is never dropped.

// DaysAhead is how many days after today have their inbox partition
// created in advance.
const DaysAhead = 2

// MaintainEvery is how often Run runs Maintain.
const MaintainEvery = time.Hour

// day is t's day since the epoch (UTC).
func day(t time.Time) int32 { return int32(t.Unix() / 86400) }

// partitionSet is the inbox's day partitions known to exist.
type partitionSet struct {
	mu   sync.Mutex
	days map[int32]bool
}

func (p *partitionSet) has(d int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.days[d]
}

func (p *partitionSet) set(days map[int32]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.days = days
}

// dayOf is the day partition an inbox row written now goes to: today's
// when it exists, else 0.
func (s *Store) dayOf(now time.Time) int32 {
	if d := day(now); s.parts.has(d) {
		return d
	}
	return 0
}

// Run runs Maintain now and every MaintainEvery until ctx ends, logging a
// failure (retried at the next round); it returns nil when ctx ends. One
// process of a deployment is enough (redrive serve runs it when
// configured); several may run it at once.
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(MaintainEvery)
	defer t.Stop()
	for {
		if err := s.Maintain(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("exactlyonce: maintenance failed; retrying later", "schema", s.cfg.Schema, "error", err, "in", MaintainEvery)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Maintain creates the inbox partitions of today and of the DaysAhead
// days after it, drops those past InboxRetention (DETACH PARTITION
// CONCURRENTLY, which lets inserts go on, then DROP TABLE), deletes the
// rows of partition 0 past it, and reloads the set of partitions the
// inbox writes to. Migrate runs it; Run runs it every hour.
func (s *Store) Maintain(ctx context.Context) error {
	today := day(s.now())
	for d := today; d <= today+DaysAhead; d++ {
		if err := s.createDay(ctx, d); err != nil {
			return fmt.Errorf("exactlyonce: create the inbox partition of day %d: %w", d, err)
		}
	}
	days, err := s.inboxDays(ctx)
	if err != nil {
		return fmt.Errorf("exactlyonce: list the inbox partitions: %w", err)
	}
	s.parts.set(days)
	var errs []error
	for d := range days {
		if d > 0 && d < today-s.days {
			if err := s.dropDay(ctx, d); err != nil {
				errs = append(errs, fmt.Errorf("exactlyonce: drop the inbox partition of day %d: %w", d, err))
			}
		}
	}
	cutoff := s.now().Add(-time.Duration(s.days) * 24 * time.Hour)
	if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.sql.inboxDay0+` WHERE received_at < $1`, cutoff); err != nil {
		errs = append(errs, fmt.Errorf("exactlyonce: delete the expired rows of partition 0: %w", err))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	days, err = s.inboxDays(ctx)
	if err != nil {
		return fmt.Errorf("exactlyonce: list the inbox partitions: %w", err)
	}
	s.parts.set(days)
	return nil
}

// partitionName is the (unqualified) name of day d's partition.
func partitionName(d int32) string { return "redrive_inbox_d" + strconv.Itoa(int(d)) }

// qualified is name in the store's schema.
func (s *Store) qualified(name string) string {
	if s.cfg.Schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{s.cfg.Schema, name}.Sanitize()
}

// createDay creates day d's partition unless it exists: CREATE TABLE then
// ATTACH PARTITION, which takes a SHARE UPDATE EXCLUSIVE lock on the inbox
// (inserts go on), giving up after lock_timeout to try again later
// (meanwhile rows go to partition 0).
func (s *Store) createDay(ctx context.Context, d int32) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('redrive/exactlyonce/partitions/' || $1::text, 0))`, s.cfg.Schema); err != nil {
		return err
	}
	name := s.qualified(partitionName(d))
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&exists); err != nil || exists {
		return err
	}
	n := strconv.Itoa(int(d))
	pn := partitionName(d)
	for _, sql := range []string{
		`SET LOCAL lock_timeout = '5s'`,
		`CREATE TABLE ` + name + ` (LIKE ` + s.sql.inbox + ` INCLUDING DEFAULTS,
			CONSTRAINT ` + pn + `_day CHECK (day = ` + n + `),
			CONSTRAINT ` + pn + `_pkey PRIMARY KEY (worker, key, day))`,
		`ALTER TABLE ` + s.sql.inbox + ` ATTACH PARTITION ` + name + ` FOR VALUES IN (` + n + `)`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// inboxDays returns the days of the inbox's partitions (0 left out),
// pending detaches included (dropDay finishes them).
func (s *Store) inboxDays(ctx context.Context) (map[int32]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, s.sql.inbox)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[int32]bool{}
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "redrive_inbox_d"); ok {
			if d, err := strconv.ParseInt(v, 10, 32); err == nil && d > 0 {
				out[int32(d)] = true
			}
		}
	}
	return out, nil
}

// dropDay detaches day d's partition concurrently (finishing a detach an
// interrupted run left pending) and drops it.
func (s *Store) dropDay(ctx context.Context, d int32) error {
	name := s.qualified(partitionName(d))
	var pending bool
	if err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass($1)), false)`,
		name).Scan(&pending); err != nil {
		return err
	}
	detach := `ALTER TABLE ` + s.sql.inbox + ` DETACH PARTITION ` + name + ` CONCURRENTLY`
	if pending {
		detach = `ALTER TABLE ` + s.sql.inbox + ` DETACH PARTITION ` + name + ` FINALIZE`
	}
	if _, err := s.pool.Exec(ctx, detach); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DROP TABLE IF EXISTS `+name)
	return err
}
