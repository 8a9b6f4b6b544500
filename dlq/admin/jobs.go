package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redrive/redrive/dlq"
)

// Job states.
const (
	JobRunning   = "running"
	JobDone      = "done"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// Job is a replay-all job as GET /internal/v1/dlq/jobs/{id} shows it.
type Job struct {
	ID         string     `json:"id"`
	DLQ        string     `json:"dlq"`
	Actor      string     `json:"actor"`
	Filter     Filter     `json:"filter"`
	Rate       float64    `json:"rate"`
	State      string     `json:"state"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Progress   Progress   `json:"progress"`
	Error      string     `json:"error,omitempty"`
	// CancelledBy and CancelledAt say who cancelled the job, and when.
	CancelledBy string     `json:"cancelled_by,omitempty"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
}

// Filter is the selection of a replay-all job.
type Filter struct {
	ErrorClass string     `json:"error_class,omitempty"`
	Text       string     `json:"q,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
}

// Progress counts a replay-all job's entries so far (see dlq.Progress):
// Mismatched entries were left pending because their recorded origin
// disagrees with their DLQ's route.
type Progress struct {
	Total      int64 `json:"total"`
	Replayed   int64 `json:"replayed"`
	Skipped    int64 `json:"skipped"`
	Failed     int64 `json:"failed"`
	Mismatched int64 `json:"mismatched"`
}

func progressOf(p dlq.Progress) Progress {
	return Progress{Total: p.Total, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed, Mismatched: p.Mismatched}
}

// Errors of the job methods.
var (
	// ErrJobRunning is returned by StartReplayAll (with the running job)
	// when the DLQ already has a running replay-all job.
	ErrJobRunning = errors.New("a replay-all job is already running for this DLQ")
	// ErrShuttingDown is returned by StartReplayAll once the server is
	// closing.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrUnknownDLQ is returned by StartReplayAll for a DLQ that is
	// neither configured nor holds records.
	ErrUnknownDLQ = errors.New("no such DLQ")
	// ErrNoJob is returned by CancelJob for a job the server does not know
	// (any more).
	ErrNoJob = errors.New("no such job (jobs are kept in memory until the server restarts)")
	// ErrJobNotRunning is returned by CancelJob (with the job) when the
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

// jobs are the server's replay-all jobs: at most one running per DLQ, the
// last max finished ones remembered.
type jobs struct {
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

func newJobs(max int) *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{max: max, ctx: ctx, cancel: cancel, byID: map[string]*job{}, running: map[string]*job{}}
}

// start runs fn as a new job of j.DLQ unless one is running.
func (js *jobs) start(j *job, fn func(ctx context.Context, j *job)) (*job, error) {
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
		fn(js.ctx, j)
		js.mu.Lock()
		defer js.mu.Unlock()
		delete(js.running, j.DLQ)
		js.finished = append(js.finished, j.ID)
		for len(js.finished) > js.max {
			delete(js.byID, js.finished[0])
			js.finished = js.finished[1:]
		}
	}()
	return j, nil
}

func (js *jobs) get(id string) *job {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byID[id]
}

// list returns the jobs, newest first.
func (js *jobs) list() []*job {
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

// close cancels the running jobs and waits for them.
func (js *jobs) close() {
	js.cancel()
	js.wg.Wait()
}

// StartReplayAll starts a background job replaying the pending entries of
// q.DLQ that q's filter selects (ErrorClass, Text, Since, Until; the other
// fields are ignored), at most rate per second (0 = as fast as the broker
// confirms, negative = Config.DefaultRate; else from dlq.MinReplayRate to
// dlq.MaxReplayRate, dlq.ErrInvalidQuery outside), with actor in the audit
// rows. ctx bounds only the start; the job runs until it is done, it is
// cancelled (CancelJob) or the server is closed. It returns the new job;
// with ErrJobRunning, the job already running for that DLQ; ErrUnknownDLQ
// for a DLQ neither configured nor holding records; ErrShuttingDown once
// Close was called.
func (s *Server) StartReplayAll(ctx context.Context, q dlq.Query, actor string, rate float64) (Job, error) {
	if rate < 0 {
		rate = s.cfg.DefaultRate
	}
	if math.IsNaN(rate) || !dlq.ValidReplayRate(rate) {
		return Job{}, fmt.Errorf("%w: rate: %v is not 0 or from %v to %v messages per second", dlq.ErrInvalidQuery, rate, dlq.MinReplayRate, dlq.MaxReplayRate)
	}
	q = dlq.Query{DLQ: q.DLQ, Status: dlq.StatusPending, ErrorClass: q.ErrorClass, Text: q.Text, Since: q.Since, Until: q.Until}
	if err := q.Validate(); err != nil {
		return Job{}, err
	}
	if q.DLQ == "" {
		return Job{}, fmt.Errorf("%w: dlq: required", dlq.ErrInvalidQuery)
	}
	if actor == "" {
		actor = DefaultActor
	}
	known, err := s.ops.Known(ctx, q.DLQ)
	if err != nil {
		return Job{}, err
	}
	if !known {
		return Job{}, fmt.Errorf("%w: %q", ErrUnknownDLQ, q.DLQ)
	}
	j := &job{Job: Job{
		ID: dlq.NewID(time.Now()), DLQ: q.DLQ, Actor: actor, Rate: rate, State: JobRunning, StartedAt: time.Now().UTC(),
		Filter: Filter{ErrorClass: q.ErrorClass, Text: q.Text, Since: timePtr(q.Since), Until: timePtr(q.Until)},
	}}
	got, err := s.jobs.start(j, func(ctx context.Context, j *job) { s.runReplayAll(ctx, j, q) })
	if errors.Is(err, ErrJobRunning) {
		return got.view(), err
	}
	if err != nil {
		return Job{}, err
	}
	return got.view(), nil
}

// runReplayAll runs job j on q and records how it ended.
func (s *Server) runReplayAll(ctx context.Context, j *job, q dlq.Query) {
	p, err := s.ops.ReplayAll(ctx, q, dlq.ReplayAllOptions{
		Actor: j.Actor, Rate: j.Rate, Stop: j.stop,
		Progress: func(p dlq.Progress) {
			j.mu.Lock()
			j.Progress = progressOf(p)
			j.mu.Unlock()
		},
	})
	now := time.Now().UTC()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.Progress = progressOf(p)
	j.FinishedAt = &now
	switch {
	case err == nil:
		j.State = JobDone
	case errors.Is(err, dlq.ErrStopped):
		j.State, j.Error = JobCancelled, "cancelled by "+j.CancelledBy
	case errors.Is(err, context.Canceled):
		j.State, j.Error = JobCancelled, "the server shut down"
	default:
		j.State, j.Error = JobFailed, err.Error()
	}
	s.log.Info("admin: replay-all finished", "job", j.ID, "dlq", j.DLQ, "state", j.State, "replayed", p.Replayed,
		"mismatched", p.Mismatched, "error", err)
}

// Job returns the replay-all job id (running, or among the last
// Config.MaxJobs finished ones).
func (s *Server) Job(id string) (Job, bool) {
	j := s.jobs.get(id)
	if j == nil {
		return Job{}, false
	}
	return j.view(), true
}

// Jobs returns the replay-all jobs the server knows (the running ones and
// the last Config.MaxJobs finished ones), newest first.
func (s *Server) Jobs() []Job {
	all := s.jobs.list()
	out := make([]Job, len(all))
	for i, j := range all {
		out[i] = j.view()
	}
	return out
}

// CancelJob cancels the running replay-all job id on behalf of actor
// (recorded in the job and logged): the job stops before its next entry
// (the entry being replayed is finished; the rest stay pending). It waits
// until the job has stopped or ctx ends, and returns the job. An unknown
// job is ErrNoJob; a job that has already ended ErrJobNotRunning (with the
// job).
func (s *Server) CancelJob(ctx context.Context, id, actor string) (Job, error) {
	j := s.jobs.get(id)
	if j == nil {
		return Job{}, ErrNoJob
	}
	if actor == "" {
		actor = DefaultActor
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
		s.log.Info("admin: replay-all cancelled", "job", j.ID, "dlq", j.DLQ, "by", actor)
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
