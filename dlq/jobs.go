package dlq

import (
	"context"
	"errors"
	"time"
)

// Job states.
const (
	JobRunning   = "running"
	JobDone      = "done"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// Job kinds.
const (
	JobReplayAll  = "replay_all"
	JobDiscardAll = "discard_all"
)

// Job is a replay-all or discard-all job (dlq/jobs runs it), in the JSON form
// the admin API shows it (GET /internal/v1/dlq/jobs/{id}).
type Job struct {
	// ID identifies the job (a time-ordered id, see NewID).
	ID string `json:"id"`
	// Kind is JobReplayAll or JobDiscardAll.
	Kind string `json:"kind"`
	// Reason is the reason of a discard-all job, in its audit rows.
	Reason string `json:"reason,omitempty"`
	// DLQ is the dead-letter queue the job replays.
	DLQ string `json:"dlq"`
	// Actor started the job; the audit rows name it.
	Actor string `json:"actor"`
	// Filter selects the pending entries replayed.
	Filter JobFilter `json:"filter"`
	// Rate is at most how many entries per second are replayed (0: as
	// fast as the broker confirms).
	Rate float64 `json:"rate"`
	// State is JobRunning, JobDone, JobFailed or JobCancelled.
	State string `json:"state"`
	// StartedAt and FinishedAt (nil while running) bound the run.
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Progress counts the entries so far.
	Progress JobProgress `json:"progress"`
	// Error says why a failed or cancelled job ended.
	Error string `json:"error,omitempty"`
	// CancelledBy and CancelledAt say who cancelled the job, and when
	// (set as soon as the cancel is asked for; the job stops before its
	// next entry).
	CancelledBy string     `json:"cancelled_by,omitempty"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	// Owner is the replica (jobs.Config.Replica) running the job, or that
	// ran it last.
	Owner string `json:"owner,omitempty"`
	// LeaseExpires is when another replica may take the running job over
	// unless Owner renews its lease first.
	LeaseExpires *time.Time `json:"lease_expires,omitempty"`
	// Takeovers counts how many times a replica resumed the job after its
	// owner's lease expired.
	Takeovers int `json:"takeovers,omitempty"`
}

// JobFilter is the selection of a replay-all job (the fields of Query it
// uses).
type JobFilter struct {
	// ErrorClass, Text, Since and Until are those of Query.
	ErrorClass string `json:"error_class,omitempty"`
	Text       string `json:"q,omitempty"`
	// Group is the failure fingerprint of Query.Group.
	Group string     `json:"group,omitempty"`
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
}

// JobProgress counts a job's entries so far (see Progress):
// Mismatched entries were left pending because their recorded origin
// disagrees with their DLQ's route; Discarded counts the entries of a
// discard-all job.
type JobProgress struct {
	// Total, Replayed, Skipped, Failed and Mismatched are those of
	// Progress.
	Total      int64 `json:"total"`
	Replayed   int64 `json:"replayed"`
	Skipped    int64 `json:"skipped"`
	Failed     int64 `json:"failed"`
	Mismatched int64 `json:"mismatched"`
	Discarded  int64 `json:"discarded"`
	// Duplicates were handled by a replica that died before recording
	// them; the replica that took the job over did not replay them again
	// (see ReplayAllResume).
	Duplicates int64 `json:"duplicates"`
}

// Errors of the job methods.
var (
	// ErrJobRunning is returned by jobs.Jobs.StartReplayAll and StartDiscardAll
	// (with the running job) when the DLQ already has a running job of
	// either kind.
	ErrJobRunning = errors.New("a replay-all or discard-all job is already running for this DLQ")
	// ErrShuttingDown is returned by StartReplayAll once jobs.Jobs.Close was
	// called.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrUnknownDLQ is returned by StartReplayAll for a DLQ that is
	// neither configured nor holds records.
	ErrUnknownDLQ = errors.New("no such DLQ")
	// ErrNoJob is returned by Cancel and Lookup for a job the job store
	// does not hold (any more).
	ErrNoJob = errors.New("no such job")
	// ErrJobNotRunning is returned by Cancel (with the job) when the
	// job has already ended.
	ErrJobNotRunning = errors.New("the job is not running")
	// ErrLeaseLost is returned by a JobStore when the replica saving a
	// job no longer owns it (its lease expired and another replica took
	// the job over) or the job has ended.
	ErrLeaseLost = errors.New("the replay-all job is owned by another replica or has ended")
)

// JobState is what a JobStore keeps of a replay-all job: its view and
// what a replica needs to resume it.
type JobState struct {
	Job
	// Until ends the window of entries the job replays (received before
	// it): the filter's until, or the job's start.
	Until time.Time
	// Cursor is where the job resumes: after the last page it
	// checkpointed (a Cursor encoding); empty = from the start.
	Cursor string
}

// JobStore keeps the replay-all jobs jobs.Jobs runs. The in-memory one
// (NewMemJobStore) serves one process; dlq/pgstore's serves replicas
// sharing a database. Methods are safe for concurrent use.
type JobStore interface {
	// CreateJob stores j, running, owned by j.Owner until
	// j.LeaseExpires, unless j.DLQ already has a running job: then it
	// returns that job and ErrJobRunning.
	CreateJob(ctx context.Context, j JobState) (JobState, error)
	// GetJob returns job id; ErrNoJob when the store has none.
	GetJob(ctx context.Context, id string) (JobState, error)
	// ListJobs returns the running jobs and the last max finished ones,
	// newest first.
	ListJobs(ctx context.Context, max int) ([]JobState, error)
	// SaveJob records j's Progress, Cursor and LeaseExpires while j.Owner
	// owns j and it runs, and returns the job as stored (CancelledBy set
	// once a cancel was asked for). ErrLeaseLost otherwise.
	SaveJob(ctx context.Context, j JobState) (JobState, error)
	// FinishJob records j's end (State, Error, FinishedAt, Progress) while
	// j.Owner owns it; ErrLeaseLost otherwise. Only the last max finished
	// jobs need be kept.
	FinishJob(ctx context.Context, j JobState, max int) error
	// CancelJob records that actor asked at to cancel the running job id
	// (the first request is kept) and returns the job: ErrNoJob, or the
	// job with ErrJobNotRunning when it has ended.
	CancelJob(ctx context.Context, id, actor string, at time.Time) (JobState, error)
	// ClaimJob makes owner the owner of one running job whose lease
	// expired before now, until leaseUntil, counting the takeover, and
	// returns it; false when there is none.
	ClaimJob(ctx context.Context, owner string, now, leaseUntil time.Time) (JobState, bool, error)
}
