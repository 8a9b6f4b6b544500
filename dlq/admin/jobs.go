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

// errJobRunning is returned by start when the DLQ has a running job.
var errJobRunning = errors.New("a replay-all job is already running for this DLQ")

// start runs fn as a new job of j.DLQ unless one is running.
func (js *jobs) start(j *job, fn func(ctx context.Context, j *job)) (*job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.ctx.Err() != nil {
		return nil, errors.New("the server is shutting down")
	}
	if cur := js.running[j.DLQ]; cur != nil {
		return cur, errJobRunning
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
	known, err := s.ops.Known(r.Context(), q.DLQ)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !known {
		writeError(w, http.StatusNotFound, "", fmt.Sprintf("no DLQ named %q (see GET /internal/v1/dlq)", q.DLQ))
		return
	}
	j := &job{Job: Job{
		ID: dlq.NewID(time.Now()), DLQ: q.DLQ, Actor: actor(r), Rate: rate, State: JobRunning, StartedAt: time.Now().UTC(),
		Filter: Filter{ErrorClass: q.ErrorClass, Text: q.Text, Since: timePtr(q.Since), Until: timePtr(q.Until)},
	}}
	got, err := s.jobs.start(j, func(ctx context.Context, j *job) {
		p, err := s.ops.ReplayAll(ctx, q, dlq.ReplayAllOptions{
			Actor: j.Actor, Rate: rate,
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
	})
	if errors.Is(err, errJobRunning) {
		writeJSON(w, http.StatusConflict, struct {
			Error string `json:"error"`
			Job   *Job   `json:"job"`
		}{err.Error(), got.view()})
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", err.Error())
		return
	}
	w.Header().Set("Location", "/internal/v1/dlq/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, struct {
		Job *Job `json:"job"`
	}{got.view()})
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
	j := s.jobs.get(id)
	if j == nil {
		writeError(w, http.StatusNotFound, "", "no such job (jobs are kept in memory until the server restarts)")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Job *Job `json:"job"`
	}{j.view()})
}
