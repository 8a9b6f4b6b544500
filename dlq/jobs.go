package dlq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
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

// Job is a replay-all or discard-all job (Jobs runs it), in the JSON form
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
	// CancelledBy and CancelledAt say who cancelled the job, and when.
	CancelledBy string     `json:"cancelled_by,omitempty"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
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
}

func progressOf(kind string, p Progress) JobProgress {
	if kind == JobDiscardAll {
		return JobProgress{Total: p.Total, Discarded: p.Replayed, Skipped: p.Skipped, Failed: p.Failed}
	}
	return JobProgress{Total: p.Total, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed, Mismatched: p.Mismatched}
}

// Errors of the job methods.
var (
	// ErrJobRunning is returned by StartReplayAll (with the running job)
	// when the DLQ already has a running replay-all job.
	ErrJobRunning = errors.New("a replay-all job is already running for this DLQ")
	// ErrShuttingDown is returned by StartReplayAll once Jobs.Close was
	// called.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrUnknownDLQ is returned by StartReplayAll for a DLQ that is
	// neither configured nor holds records.
	ErrUnknownDLQ = errors.New("no such DLQ")
	// ErrNoJob is returned by Cancel for a job Jobs does not know (any
	// more).
	ErrNoJob = errors.New("no such job (jobs are kept in memory until the server restarts)")
	// ErrJobNotRunning is returned by Cancel (with the job) when the
	// job has already ended.
	ErrJobNotRunning = errors.New("the job is not running")
)

// job is one replay-all run; its exported view is Job.
type job struct {
	stop chan struct{} // closed by cancel
	done chan struct{} // closed when the run has ended

	mu sync.Mutex
	Job
}

// view returns a copy of j for encoding, under its lock.
func (j *job) view() Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.Job
}

// Defaults of JobsConfig.
const (
	DefaultJobRate     = 100 // replay-all entries per second when a job gives no rate
	DefaultMaxFinished = 100
	// DefaultJobActor is the actor of a job started without one.
	DefaultJobActor = "admin"
)

// JobsConfig configures Jobs.
type JobsConfig struct {
	// Ops replays. Required.
	Ops *Ops
	// DefaultRate is the rate (entries/s) of a job started with a
	// negative rate; default DefaultJobRate, negative = as fast as the
	// broker confirms. Like a job's rate, it is 0 or from MinReplayRate to
	// MaxReplayRate.
	DefaultRate float64
	// MaxFinished is how many finished jobs are remembered; default
	// DefaultMaxFinished.
	MaxFinished int
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Jobs runs replay-all jobs in the background, at most one running per
// DLQ, and remembers the last JobsConfig.MaxFinished finished ones (in
// memory: a restart forgets them; entries a job left replaying are
// reconciled by Ops.Run). The admin API and the console share one. All
// methods are safe for concurrent use.
type Jobs struct {
	ops    *Ops
	rate   float64
	log    *slog.Logger
	max    int
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	byID     map[string]*job
	order    []string        // ids, oldest first
	running  map[string]*job // by DLQ
	finished []string        // ids, oldest first
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c JobsConfig) Validate() error {
	if c.Ops == nil {
		return errors.New("dlq: JobsConfig.Ops: required")
	}
	if rate := c.defaultRate(); !ValidReplayRate(rate) {
		return fmt.Errorf("dlq: JobsConfig.DefaultRate: must be 0, negative or from %v to %v messages per second, got %v", MinReplayRate, MaxReplayRate, c.DefaultRate)
	}
	return nil
}

// defaultRate is DefaultRate with its default applied (0 = unbounded).
func (c JobsConfig) defaultRate() float64 {
	switch {
	case c.DefaultRate == 0:
		return DefaultJobRate
	case c.DefaultRate < 0:
		return 0
	}
	return c.DefaultRate
}

// NewJobs checks cfg and returns the runner; Close stops it.
func NewJobs(cfg JobsConfig) (*Jobs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.DefaultRate = cfg.defaultRate()
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = DefaultMaxFinished
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Jobs{ops: cfg.Ops, rate: cfg.DefaultRate, log: cfg.Logger, max: cfg.MaxFinished,
		ctx: ctx, cancel: cancel, byID: map[string]*job{}, running: map[string]*job{}}, nil
}

// start runs fn as a new job of j.DLQ unless one is running. fn returns
// how to record the job's end; start applies it in the same critical
// section that frees the DLQ's slot, so that a job seen finished never
// still blocks the next one (ErrJobRunning).
func (js *Jobs) start(j *job, fn func(ctx context.Context, j *job) (finish func())) (*job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.ctx.Err() != nil {
		return nil, ErrShuttingDown
	}
	if cur := js.running[j.DLQ]; cur != nil {
		return cur, ErrJobRunning
	}
	j.stop, j.done = make(chan struct{}), make(chan struct{})
	js.byID[j.ID] = j
	js.order = append(js.order, j.ID)
	js.running[j.DLQ] = j
	js.wg.Add(1)
	go func() {
		defer js.wg.Done()
		defer close(j.done)
		finish := fn(js.ctx, j)
		js.mu.Lock()
		defer js.mu.Unlock()
		delete(js.running, j.DLQ)
		finish()
		js.finished = append(js.finished, j.ID)
		for len(js.finished) > js.max {
			delete(js.byID, js.finished[0])
			js.finished = js.finished[1:]
		}
	}()
	return j, nil
}

func (js *Jobs) get(id string) *job {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byID[id]
}

// list returns the jobs, newest first.
func (js *Jobs) list() []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*job, 0, len(js.byID))
	kept := js.order[:0]
	for _, id := range js.order {
		if j := js.byID[id]; j != nil {
			kept = append(kept, id)
			out = append(out, j)
		}
	}
	js.order = kept
	for i, k := 0, len(out)-1; i < k; i, k = i+1, k-1 {
		out[i], out[k] = out[k], out[i]
	}
	return out
}

// Close cancels the running jobs and waits for them: each stops before its
// next entry (the rest stay pending). StartReplayAll fails with
// ErrShuttingDown afterwards.
func (js *Jobs) Close() {
	js.cancel()
	js.wg.Wait()
}

// StartReplayAll starts a background job replaying the pending entries of
// q.DLQ that q's filter selects (ErrorClass, Text, Since, Until; the other
// fields are ignored), at most rate per second (0 = as fast as the broker
// confirms, negative = JobsConfig.DefaultRate; else from MinReplayRate to
// MaxReplayRate, ErrInvalidQuery outside), with actor (default
// DefaultJobActor) in the audit rows. ctx bounds only the start; the job
// runs until it is done, it is cancelled (Cancel) or Close is called. It
// returns the new job; with ErrJobRunning, the job already running for
// that DLQ; ErrUnknownDLQ for a DLQ neither configured nor holding
// records; ErrShuttingDown once Close was called.
func (js *Jobs) StartReplayAll(ctx context.Context, q Query, actor string, rate float64) (Job, error) {
	if rate < 0 {
		rate = js.rate
	}
	if math.IsNaN(rate) || !ValidReplayRate(rate) {
		return Job{}, fmt.Errorf("%w: rate: %v is not 0 or from %v to %v messages per second", ErrInvalidQuery, rate, MinReplayRate, MaxReplayRate)
	}
	q, j, err := js.newJob(ctx, JobReplayAll, q, actor, rate)
	if err != nil {
		return Job{}, err
	}
	got, err := js.start(j, func(ctx context.Context, j *job) func() { return js.runReplayAll(ctx, j, q) })
	if errors.Is(err, ErrJobRunning) {
		return got.view(), err
	}
	if err != nil {
		return Job{}, err
	}
	return got.view(), nil
}

// newJob checks the selection q of a job of kind and returns it (the
// pending entries of q's filter) with the job, not started.
func (js *Jobs) newJob(ctx context.Context, kind string, q Query, actor string, rate float64) (Query, *job, error) {
	q = Query{DLQ: q.DLQ, Status: StatusPending, ErrorClass: q.ErrorClass, Text: q.Text, Group: q.Group, Since: q.Since, Until: q.Until}
	if err := q.Validate(); err != nil {
		return q, nil, err
	}
	if q.DLQ == "" {
		return q, nil, fmt.Errorf("%w: dlq: required", ErrInvalidQuery)
	}
	if actor == "" {
		actor = DefaultJobActor
	}
	known, err := js.ops.Known(ctx, q.DLQ)
	if err != nil {
		return q, nil, err
	}
	if !known {
		return q, nil, fmt.Errorf("%w: %q", ErrUnknownDLQ, q.DLQ)
	}
	return q, &job{Job: Job{
		ID: NewID(time.Now()), Kind: kind, DLQ: q.DLQ, Actor: actor, Rate: rate, State: JobRunning, StartedAt: time.Now().UTC(),
		Filter: JobFilter{ErrorClass: q.ErrorClass, Text: q.Text, Group: q.Group, Since: timePtr(q.Since), Until: timePtr(q.Until)},
	}}, nil
}

// runReplayAll runs job j on q and returns the function that records how
// it ended (called by start with the DLQ's slot freed).
func (js *Jobs) runReplayAll(ctx context.Context, j *job, q Query) (finish func()) {
	p, err := js.ops.ReplayAll(ctx, q, ReplayAllOptions{
		Actor: j.Actor, Rate: j.Rate, Stop: j.stop,
		Progress: func(p Progress) {
			j.mu.Lock()
			j.Progress = progressOf(j.Kind, p)
			j.mu.Unlock()
		},
	})
	return js.finish(j, p, err)
}

// finish returns the function that records how job j ended, with progress
// p and error err.
func (js *Jobs) finish(j *job, p Progress, err error) func() {
	return func() {
		now := time.Now().UTC()
		j.mu.Lock()
		defer j.mu.Unlock()
		j.Progress = progressOf(j.Kind, p)
		j.FinishedAt = &now
		switch {
		case err == nil:
			j.State = JobDone
		case errors.Is(err, ErrStopped):
			j.State, j.Error = JobCancelled, "cancelled by "+j.CancelledBy
		case errors.Is(err, context.Canceled):
			j.State, j.Error = JobCancelled, "the server shut down"
		default:
			j.State, j.Error = JobFailed, err.Error()
		}
		js.log.Info("dlq: job finished", "job", j.ID, "kind", j.Kind, "dlq", j.DLQ, "state", j.State, "done", p.Replayed,
			"mismatched", p.Mismatched, "error", err)
	}
}

// Job returns the replay-all job id (running, or among the last
// JobsConfig.MaxFinished finished ones).
func (js *Jobs) Job(id string) (Job, bool) {
	j := js.get(id)
	if j == nil {
		return Job{}, false
	}
	return j.view(), true
}

// List returns the replay-all jobs js knows (the running ones and the
// last JobsConfig.MaxFinished finished ones), newest first.
func (js *Jobs) List() []Job {
	all := js.list()
	out := make([]Job, len(all))
	for i, j := range all {
		out[i] = j.view()
	}
	return out
}

// Cancel cancels the running replay-all job id on behalf of actor
// (recorded in the job and logged): the job stops before its next entry
// (the entry being replayed is finished; the rest stay pending). It waits
// until the job has stopped or ctx ends, and returns the job. An unknown
// job is ErrNoJob; a job that has already ended ErrJobNotRunning (with the
// job).
func (js *Jobs) Cancel(ctx context.Context, id, actor string) (Job, error) {
	j := js.get(id)
	if j == nil {
		return Job{}, ErrNoJob
	}
	if actor == "" {
		actor = DefaultJobActor
	}
	j.mu.Lock()
	switch {
	case j.State != JobRunning:
		j.mu.Unlock()
		return j.view(), ErrJobNotRunning
	case j.CancelledBy == "": // the first cancel is the one recorded
		now := time.Now().UTC()
		j.CancelledBy, j.CancelledAt = actor, &now
		close(j.stop)
		js.log.Info("dlq: replay-all cancelled", "job", j.ID, "dlq", j.DLQ, "by", actor)
	}
	j.mu.Unlock()
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	return j.view(), nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
