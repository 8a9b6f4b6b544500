package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultBackfillBatch is how many entries (by seq) one backfill
// transaction counts.
const DefaultBackfillBatch = 10_000

// backfillPause separates the backfill's batches, so that writers waiting
// for a batch's lock get their turn.
const backfillPause = 10 * time.Millisecond

// Backfill counts into dlq_counts the entries that existed before schema
// version 3 (seq up to dlq_counts_backfill.upto), at most maxBatches
// batches of Config.BackfillBatch entries (0 = until done), and reports
// whether none is left. Each batch is one short transaction: it locks
// dlq_entries and dlq_entries_archive in SHARE mode (writers wait for it,
// readers do not), counts the batch's seq range of both, and advances
// dlq_counts_backfill.done; several instances may run it at once (they
// take turns on that row), and a stopped one resumes where the last batch
// ended. Open runs it in the background unless Config.BackfillManual is
// set.
func (s *Store) Backfill(ctx context.Context, maxBatches int) (done bool, err error) {
	for n := 0; maxBatches <= 0 || n < maxBatches; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(backfillPause):
			}
		}
		left, err := s.backfillBatch(ctx)
		if err != nil {
			return false, fmt.Errorf("pgstore: backfill counts: %w", err)
		}
		if left == 0 {
			return true, nil
		}
	}
	var upto, doneSeq int64
	if err := s.pool.QueryRow(ctx, `SELECT upto, done FROM dlq_counts_backfill`).Scan(&upto, &doneSeq); err != nil {
		return false, fmt.Errorf("pgstore: backfill counts: %w", err)
	}
	return doneSeq >= upto, nil
}

// backfillBatch counts one batch and returns how many seq values are left.
func (s *Store) backfillBatch(ctx context.Context) (int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var upto, from int64
	if err := tx.QueryRow(ctx, `SELECT upto, done FROM dlq_counts_backfill FOR UPDATE`).Scan(&upto, &from); err != nil {
		return 0, err
	}
	if from >= upto {
		return 0, nil
	}
	to := min(from+int64(s.batchSize), upto)
	if _, err := tx.Exec(ctx, `LOCK TABLE dlq_entries, dlq_entries_archive IN SHARE MODE`); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO dlq_counts AS c (dlq, status, severity, n)
		SELECT dlq, st, severity, sum(n) FROM (
			SELECT dlq, status AS st, severity, count(*) AS n FROM dlq_entries WHERE seq > $1 AND seq <= $2 GROUP BY 1, 2, 3
			UNION ALL
			SELECT dlq, 'archived', severity, count(*) FROM dlq_entries_archive WHERE seq > $1 AND seq <= $2 GROUP BY 1, 2, 3) x
		GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
		ON CONFLICT (dlq, status, severity) DO UPDATE SET n = c.n + excluded.n`, from, to); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE dlq_counts_backfill SET done = $1`, to); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	if to == upto {
		s.log.Info("pgstore: counts backfilled", "entries_up_to_seq", upto)
	}
	return upto - to, nil
}

// backfillInBackground runs Backfill, then BackfillFingerprints, until
// done or ctx ends, retrying after errors.
func (s *Store) backfillInBackground(ctx context.Context) {
	defer close(s.backfilled)
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		done, err := s.Backfill(ctx, 0)
		if done && err == nil {
			done, err = s.BackfillFingerprints(ctx, 0)
		}
		if done || ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("pgstore: backfill failed; retrying", "err", err, "in", wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// pendingCounts is SQL of the counts of the entries the backfill has yet
// to count, as rows (dlq, status, severity, n), to add to dlq_counts: a
// range scan of the primary key (the bounds are scalar subqueries, so
// that the planner sees a range), empty once the backfill is done.
const pendingCounts = `SELECT dlq, status, severity, count(*) AS n FROM dlq_entries
		WHERE seq > (SELECT done FROM dlq_counts_backfill) AND seq <= (SELECT upto FROM dlq_counts_backfill) GROUP BY 1, 2, 3
	UNION ALL
	SELECT dlq, 'archived', severity, count(*) FROM dlq_entries_archive
		WHERE seq > (SELECT done FROM dlq_counts_backfill) AND seq <= (SELECT upto FROM dlq_counts_backfill) GROUP BY 1, 2, 3`

// allCounts is SQL of every entry's counts: dlq_counts and the entries
// the backfill has yet to count, in one snapshot.
const allCounts = `(SELECT dlq, status, severity, n FROM dlq_counts UNION ALL ` + pendingCounts + `)`

// countsSQL returns the SQL of every entry's counts: dlq_counts alone
// once the backfill is done (it never reopens), else allCounts. At 10 M
// entries the empty range scan of allCounts still cost ~10 ms, because
// the planner sends it to parallel workers.
func (s *Store) countsSQL(ctx context.Context) (string, error) {
	if s.counted.Load() {
		return `dlq_counts`, nil
	}
	var done bool
	if err := s.pool.QueryRow(ctx, `SELECT done >= upto FROM dlq_counts_backfill`).Scan(&done); err != nil {
		return "", fmt.Errorf("backfill state: %w", err)
	}
	if !done {
		return allCounts, nil
	}
	s.counted.Store(true)
	return `dlq_counts`, nil
}
