package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/dlq"
)

// Jobs returns the store's dlq.JobStore: the replay-all and discard-all
// jobs in table dlq_jobs, shared by every replica using the database.
func (s *Store) Jobs() dlq.JobStore { return jobStore{s} }

// jobStore is the dlq.JobStore of a Store.
type jobStore struct{ s *Store }

var _ dlq.JobStore = jobStore{}

const jobColumns = `id, kind, reason, dlq, actor, filter, until_at, rate, state, error, started_at, finished_at,
	total, replayed, skipped, failed, mismatched, duplicates, discarded, resume_after, owner, lease_expires, takeovers,
	cancelled_by, cancelled_at`

// scanJob reads a row of jobColumns.
func scanJob(row pgx.Row) (dlq.JobState, error) {
	var (
		j      dlq.JobState
		filter []byte
		p      = &j.Progress
	)
	err := row.Scan(&j.ID, &j.Kind, &j.Reason, &j.DLQ, &j.Actor, &filter, &j.Until, &j.Rate, &j.State, &j.Error, &j.StartedAt, &j.FinishedAt,
		&p.Total, &p.Replayed, &p.Skipped, &p.Failed, &p.Mismatched, &p.Duplicates, &p.Discarded, &j.Cursor, &j.Owner, &j.LeaseExpires,
		&j.Takeovers, &j.CancelledBy, &j.CancelledAt)
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal(filter, &j.Filter); err != nil {
		return j, fmt.Errorf("filter of job %s: %w", j.ID, err)
	}
	j.StartedAt, j.Until = j.StartedAt.UTC(), j.Until.UTC()
	for _, t := range []*time.Time{j.FinishedAt, j.LeaseExpires, j.CancelledAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return j, nil
}

// CreateJob implements dlq.JobStore: the partial unique index on the
// running jobs' DLQ makes a second running job of a DLQ fail, whichever
// replica starts it.
func (js jobStore) CreateJob(ctx context.Context, j dlq.JobState) (dlq.JobState, error) {
	filter, err := json.Marshal(j.Filter)
	if err != nil {
		return j, fmt.Errorf("pgstore: create job: %w", err)
	}
	p := j.Progress
	// The running job that refused the insert may end before it is read:
	// then the insert is tried again.
	for attempt := 0; ; attempt++ {
		_, err = js.s.pool.Exec(ctx, `INSERT INTO dlq_jobs (id, dlq, actor, filter, until_at, rate, state, started_at,
		total, replayed, skipped, failed, mismatched, duplicates, resume_after, owner, lease_expires, kind, reason, discarded)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
			j.ID, j.DLQ, j.Actor, filter, j.Until, j.Rate, j.State, j.StartedAt,
			p.Total, p.Replayed, p.Skipped, p.Failed, p.Mismatched, p.Duplicates, j.Cursor, j.Owner, j.LeaseExpires, j.Kind, j.Reason, p.Discarded)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "dlq_jobs_running" {
			cur, gerr := scanJob(js.s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM dlq_jobs WHERE dlq = $1 AND state = 'running'`, j.DLQ))
			if errors.Is(gerr, pgx.ErrNoRows) && attempt < 3 {
				continue
			}
			if gerr != nil {
				return j, fmt.Errorf("pgstore: create job: the running job of %s: %w", j.DLQ, gerr)
			}
			return cur, dlq.ErrJobRunning
		}
		if err != nil {
			return j, fmt.Errorf("pgstore: create job of %s: %w", j.DLQ, err)
		}
		return j, nil
	}
}

// GetJob implements dlq.JobStore.
func (js jobStore) GetJob(ctx context.Context, id string) (dlq.JobState, error) {
	j, err := scanJob(js.s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM dlq_jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, dlq.ErrNoJob
	}
	if err != nil {
		return j, fmt.Errorf("pgstore: get job %s: %w", id, err)
	}
	return j, nil
}

// ListJobs implements dlq.JobStore.
func (js jobStore) ListJobs(ctx context.Context, max int) ([]dlq.JobState, error) {
	rows, err := js.s.pool.Query(ctx, `SELECT `+jobColumns+` FROM (
		SELECT * FROM dlq_jobs WHERE state = 'running'
		UNION ALL (SELECT * FROM dlq_jobs WHERE state <> 'running' ORDER BY id DESC LIMIT $1)) j ORDER BY id DESC`, max)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list jobs: %w", err)
	}
	defer rows.Close()
	var out []dlq.JobState
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("pgstore: list jobs: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: list jobs: %w", err)
	}
	return out, nil
}

// SaveJob implements dlq.JobStore.
func (js jobStore) SaveJob(ctx context.Context, j dlq.JobState) (dlq.JobState, error) {
	p := j.Progress
	got, err := scanJob(js.s.pool.QueryRow(ctx, `UPDATE dlq_jobs SET total = $3, replayed = $4, skipped = $5, failed = $6,
		mismatched = $7, duplicates = $8, resume_after = $9, lease_expires = $10, discarded = $11
		WHERE id = $1 AND owner = $2 AND state = 'running' RETURNING `+jobColumns,
		j.ID, j.Owner, p.Total, p.Replayed, p.Skipped, p.Failed, p.Mismatched, p.Duplicates, j.Cursor, j.LeaseExpires, p.Discarded))
	if errors.Is(err, pgx.ErrNoRows) {
		return got, dlq.ErrLeaseLost
	}
	if err != nil {
		return got, fmt.Errorf("pgstore: save job %s: %w", j.ID, err)
	}
	return got, nil
}

// FinishJob implements dlq.JobStore: it deletes the finished jobs older
// than the last max in the same transaction.
func (js jobStore) FinishJob(ctx context.Context, j dlq.JobState, max int) error {
	p := j.Progress
	return pgx.BeginFunc(ctx, js.s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE dlq_jobs SET state = $3, error = $4, finished_at = $5, total = $6, replayed = $7,
			skipped = $8, failed = $9, mismatched = $10, duplicates = $11, lease_expires = NULL,
			cancelled_by = CASE WHEN cancelled_by = '' THEN $12 ELSE cancelled_by END,
			cancelled_at = COALESCE(cancelled_at, $13), discarded = $14
			WHERE id = $1 AND owner = $2 AND state = 'running'`,
			j.ID, j.Owner, j.State, j.Error, j.FinishedAt, p.Total, p.Replayed, p.Skipped, p.Failed, p.Mismatched, p.Duplicates,
			j.CancelledBy, j.CancelledAt, p.Discarded)
		if err != nil {
			return fmt.Errorf("pgstore: finish job %s: %w", j.ID, err)
		}
		if tag.RowsAffected() == 0 {
			return dlq.ErrLeaseLost
		}
		if _, err := tx.Exec(ctx, `DELETE FROM dlq_jobs WHERE state <> 'running' AND id < (
			SELECT id FROM dlq_jobs WHERE state <> 'running' ORDER BY id DESC OFFSET $1 - 1 LIMIT 1)`, max); err != nil {
			return fmt.Errorf("pgstore: forget old jobs: %w", err)
		}
		return nil
	})
}

// CancelJob implements dlq.JobStore.
func (js jobStore) CancelJob(ctx context.Context, id, actor string, at time.Time) (dlq.JobState, error) {
	j, err := scanJob(js.s.pool.QueryRow(ctx, `UPDATE dlq_jobs SET
		cancelled_by = CASE WHEN cancelled_by = '' THEN $2 ELSE cancelled_by END,
		cancelled_at = COALESCE(cancelled_at, $3)
		WHERE id = $1 AND state = 'running' RETURNING `+jobColumns, id, actor, at))
	if errors.Is(err, pgx.ErrNoRows) {
		j, err = js.GetJob(ctx, id)
		if err != nil {
			return j, err
		}
		return j, dlq.ErrJobNotRunning
	}
	if err != nil {
		return j, fmt.Errorf("pgstore: cancel job %s: %w", id, err)
	}
	return j, nil
}

// ClaimJob implements dlq.JobStore: the oldest running job whose lease
// expired, locked with SKIP LOCKED so that two replicas claiming at once
// take different jobs (or one takes it and the other none).
func (js jobStore) ClaimJob(ctx context.Context, owner string, now, leaseUntil time.Time) (dlq.JobState, bool, error) {
	j, err := scanJob(js.s.pool.QueryRow(ctx, `UPDATE dlq_jobs SET owner = $1, lease_expires = $3, takeovers = takeovers + 1
		WHERE id = (SELECT id FROM dlq_jobs WHERE state = 'running' AND lease_expires < $2 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		AND state = 'running' AND lease_expires < $2
		RETURNING `+jobColumns, owner, now, leaseUntil))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, false, nil
	}
	if err != nil {
		return j, false, fmt.Errorf("pgstore: claim a job: %w", err)
	}
	return j, true, nil
}
