package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// DefaultFingerprintBatch is how many entries one transaction of the
// fingerprint backfill fingerprints.
const DefaultFingerprintBatch = 1000

// BackfillFingerprints computes the failure fingerprint (dlq.Fingerprint)
// of the entries stored before schema version 5, live and archived, at
// most maxBatches batches of DefaultFingerprintBatch entries of each table
// (0 = until done), and reports whether none is left. Each batch is one
// short transaction that reads the oldest entries without one (a partial
// index) and updates them by seq; several instances may run it at once
// (FOR UPDATE SKIP LOCKED), and a stopped one resumes where it stopped:
// the entries left are those still without a fingerprint. Open runs it
// in the background, after the counts backfill, unless
// Config.BackfillManual is set.
func (s *Store) BackfillFingerprints(ctx context.Context, maxBatches int) (done bool, err error) {
	for _, table := range []string{"dlq_entries", "dlq_entries_archive"} {
		for n := 0; ; n++ {
			if maxBatches > 0 && n >= maxBatches {
				return false, nil
			}
			if n > 0 {
				select {
				case <-ctx.Done():
					return false, ctx.Err()
				case <-time.After(backfillPause):
				}
			}
			got, err := s.fingerprintBatch(ctx, table)
			if err != nil {
				return false, fmt.Errorf("pgstore: backfill fingerprints of %s: %w", table, err)
			}
			if got < DefaultFingerprintBatch {
				break
			}
		}
	}
	var left bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_entries WHERE fingerprint = '')
		OR EXISTS (SELECT 1 FROM dlq_entries_archive WHERE fingerprint = '')`).Scan(&left); err != nil {
		return false, fmt.Errorf("pgstore: backfill fingerprints: %w", err)
	}
	return !left, nil
}

// fingerprintBatch fingerprints one batch of table and returns how many
// entries it did.
func (s *Store) fingerprintBatch(ctx context.Context, table string) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	rows, err := tx.Query(ctx, `SELECT seq, error_class, error_message, worker FROM `+table+`
		WHERE fingerprint = '' ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, DefaultFingerprintBatch)
	if err != nil {
		return 0, err
	}
	var seqs []int64
	var fps []string
	var seq int64
	var e dlq.Entry
	if _, err := pgx.ForEachRow(rows, []any{&seq, &e.ErrorClass, &e.ErrorMessage, &e.Worker}, func() error {
		seqs, fps = append(seqs, seq), append(fps, dlq.Fingerprint(e))
		return nil
	}); err != nil {
		return 0, err
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE `+table+` t SET fingerprint = v.fp
		FROM unnest($1::bigint[], $2::text[]) AS v(seq, fp) WHERE t.seq = v.seq`, seqs, fps); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return len(seqs), nil
}
