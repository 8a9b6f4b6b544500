package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
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

// job is one replay-all run; its exported view is Job.
type job struct {
	mu sync.Mutex
	Job
}

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
}

// Filter is the selection of a replay-all job.
type Filter struct {
	ErrorClass string     `json:"error_class,omitempty"`
	Text       string     `json:"q,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	Until      *time.Time `json:"until,omitempty"`
}

// Progress counts a replay-all job's entries so far.
type Progress struct {
	Total    int64 `json:"total"`
	Replayed int64 `json:"replayed"`
	Skipped  int64 `json:"skipped"`
	Failed   int64 `json:"failed"`
}

// view returns a copy of j for encoding, under its lock.
func (j *job) view() *Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	v := j.Job
	return &v
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
	running  map[string]*job // by DLQ
	finished []string        // ids, oldest first
}

func newJobs(max int) *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{max: max, ctx: ctx, cancel: cancel, byID: map[string]*job{}, running: map[string]*job{}}
}

// ErrJobRunning is returned by StartReplayAll (with the running job) when
// the DLQ already has a running replay-all job.
var ErrJobRunning = errors.New("a replay-all job is already running for this DLQ")

// ErrShuttingDown is returned by StartReplayAll once the server is closing.
var ErrShuttingDown = errors.New("the server is shutting down")

// ErrUnknownDLQ is returned by StartReplayAll for a DLQ that is neither
// configured nor holds records.
var ErrUnknownDLQ = errors.New("no such DLQ")

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
	js.byID[j.ID] = j
	js.running[j.DLQ] = j
	js.wg.Add(1)
	go func() {
		defer js.wg.Done()
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

// close cancels the running jobs and waits for them.
func (js *jobs) close() {
	js.cancel()
	js.wg.Wait()
}

// replayAll serves POST /internal/v1/dlq/replay-all?topic=…: it starts a
// background job and answers 202 with it (Location: its URL); 409 when the
// DLQ already has a running job.
func (s *Server) replayAll(w http.ResponseWriter, r *http.Request) {
	p := readParams(r, "topic", "error_class", "q", "since", "until", "rate")
	q := dlq.Query{Status: dlq.StatusPending}
	err := p.err
	if err == nil {
		q.DLQ, err = dlqName("topic", p.str("topic"))
	}
	rate := s.cfg.DefaultRate
	if err == nil {
		p.filter(&q)
		err = p.err
	}
	if v := p.str("rate"); err == nil && v != "" {
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e6 {
			err = bad("rate", "%.40q is not a number of messages per second from 0 (unlimited) to 1000000", v)
		}
		rate = f
	}
	if err == nil {
		err = decodeBody(r, &struct{}{}, true)
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	j, err := s.StartReplayAll(r.Context(), q, actor(r), rate)
	switch {
	case errors.Is(err, ErrUnknownDLQ):
		writeError(w, http.StatusNotFound, "", fmt.Sprintf("no DLQ named %q (see GET /internal/v1/dlq)", q.DLQ))
		return
	case errors.Is(err, ErrJobRunning):
		writeJSON(w, http.StatusConflict, struct {
			Error string `json:"error"`
			Job   *Job   `json:"job"`
		}{err.Error(), &j})
		return
	case errors.Is(err, ErrShuttingDown):
		writeError(w, http.StatusServiceUnavailable, "", err.Error())
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/internal/v1/dlq/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, struct {
		Job *Job `json:"job"`
	}{&j})
}

// StartReplayAll starts a background job replaying the pending entries of
// q.DLQ that q's filter selects (ErrorClass, Text, Since, Until; the other
// fields are ignored), at most rate per second (0 = unlimited, negative =
// Config.DefaultRate), with actor in the audit rows. ctx bounds only the
// start; the job runs until it is done or the server is closed. It
// returns the new job; with ErrJobRunning, the job already running for
// that DLQ; ErrUnknownDLQ for a DLQ neither configured nor holding
// records; ErrShuttingDown once Close was called.
func (s *Server) StartReplayAll(ctx context.Context, q dlq.Query, actor string, rate float64) (Job, error) {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		rate = s.cfg.DefaultRate
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
		return *got.view(), err
	}
	if err != nil {
		return Job{}, err
	}
	return *got.view(), nil
}

// runReplayAll runs job j on q and records how it ended.
func (s *Server) runReplayAll(ctx context.Context, j *job, q dlq.Query) {
	p, err := s.ops.ReplayAll(ctx, q, dlq.ReplayAllOptions{
		Actor: j.Actor, Rate: j.Rate,
		Progress: func(p dlq.Progress) {
			j.mu.Lock()
			j.Progress = Progress{Total: p.Total, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed}
			j.mu.Unlock()
		},
	})
	now := time.Now().UTC()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.Progress = Progress{Total: p.Total, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed}
	j.FinishedAt = &now
	switch {
	case err == nil:
		j.State = JobDone
	case errors.Is(err, context.Canceled):
		j.State, j.Error = JobCancelled, "the server shut down"
	default:
		j.State, j.Error = JobFailed, err.Error()
	}
	s.log.Info("admin: replay-all finished", "job", j.ID, "dlq", j.DLQ, "state", j.State, "replayed", p.Replayed, "error", err)
}

// Job returns the replay-all job id (running, or among the last
// Config.MaxJobs finished ones).
func (s *Server) Job(id string) (Job, bool) {
	j := s.jobs.get(id)
	if j == nil {
		return Job{}, false
	}
	return *j.view(), true
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// job serves GET /internal/v1/dlq/jobs/{id}.
func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	id, err := entryID("id", r.PathValue("id"))
	if err == nil {
		err = readParams(r).err
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	j, ok := s.Job(id)
	if !ok {
		writeError(w, http.StatusNotFound, "", "no such job (jobs are kept in memory until the server restarts)")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Job *Job `json:"job"`
	}{&j})
}
