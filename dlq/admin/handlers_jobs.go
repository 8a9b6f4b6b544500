package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// parseRate reads the rate parameter of replay-all (operate.ParseReplayRate).
func parseRate(v string) (float64, error) {
	f, err := operate.ParseReplayRate(v)
	if err != nil {
		return 0, bad("rate", "%v", err)
	}
	return f, nil
}

// replayAll serves POST /internal/v1/dlq/replay-all?topic=…: it starts a
// background job and answers 202 with it (Location: its URL); 409 when the
// DLQ already has a running job.
func (s *Server) replayAll(w http.ResponseWriter, r *http.Request) {
	s.startJob(w, r, false)
}

// discardAll serves POST /internal/v1/dlq/discard-all?topic=…: as
// replayAll, discarding with a reason (query or body, required).
func (s *Server) discardAll(w http.ResponseWriter, r *http.Request) {
	s.startJob(w, r, true)
}

// startJob reads the parameters of replay-all or discard-all and starts
// the job.
func (s *Server) startJob(w http.ResponseWriter, r *http.Request, discard bool) {
	allowed := []string{"topic", "error_class", "q", "group", "since", "until", "rate"}
	if discard {
		allowed = append(allowed, "reason")
	}
	p := readParams(r, allowed...)
	q := dlq.Query{Status: dlq.StatusPending}
	err := p.err
	if err == nil {
		q.DLQ, err = dlqName("topic", p.str("topic"))
	}
	rate := -1.0 // the default
	if err == nil {
		p.filter(&q)
		err = p.err
	}
	if v := p.str("rate"); err == nil && v != "" {
		rate, err = parseRate(v)
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err == nil && discard {
		err = decodeBody(r, &body, true)
	} else if err == nil {
		err = decodeBody(r, &struct{}{}, true)
	}
	reason := body.Reason + p.str("reason")
	if err == nil && discard {
		err = checkReason(body.Reason, p.str("reason"), "the entries are discarded")
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	var j dlq.Job
	if discard {
		j, err = s.jobs.StartDiscardAll(r.Context(), q, actor(r), reason, rate)
	} else {
		j, err = s.jobs.StartReplayAll(r.Context(), q, actor(r), rate)
	}
	switch {
	case errors.Is(err, dlq.ErrUnknownDLQ):
		writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no DLQ named %q (see GET /internal/v1/dlq)", q.DLQ))
		return
	case errors.Is(err, dlq.ErrJobRunning):
		writeJSON(w, http.StatusConflict, errorJSON{Error: err.Error(), Code: CodeJobRunning, Job: &j})
		return
	case errors.Is(err, dlq.ErrShuttingDown):
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "", err.Error())
		return
	case err != nil:
		s.reject(w, r, err) // a *dlq.FieldError: a since not in the past
		return
	}
	w.Header().Set("Location", "/internal/v1/dlq/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, struct {
		Job *dlq.Job `json:"job"`
	}{&j})
}

// jobID reads the {id} of a job route.
func jobID(r *http.Request) (string, error) {
	id, err := entryID("id", r.PathValue("id"))
	if err == nil {
		err = readParams(r).err
	}
	return id, err
}

// job serves GET /internal/v1/dlq/jobs/{id}.
func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		s.reject(w, r, err)
		return
	}
	j, err := s.jobs.Lookup(r.Context(), id)
	if errors.Is(err, dlq.ErrNoJob) {
		writeError(w, http.StatusNotFound, CodeNotFound, "", dlq.ErrNoJob.Error())
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Job *dlq.Job `json:"job"`
	}{&j})
}

// listJobs serves GET /internal/v1/dlq/jobs: the running jobs and the last
// finished ones, newest first.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	if err := readParams(r).err; err != nil {
		s.reject(w, r, err)
		return
	}
	jobs, err := s.jobs.ListJobs(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if jobs == nil {
		jobs = []dlq.Job{}
	}
	writeJSON(w, http.StatusOK, struct {
		Jobs []dlq.Job `json:"jobs"`
	}{jobs})
}

// cancelJob serves POST /internal/v1/dlq/jobs/{id}/cancel: it stops the
// running job before its next entry and answers with the job once it has
// stopped; 409 (with the job) when it has already ended.
func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err == nil {
		err = decodeBody(r, &struct{}{}, true)
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	j, err := s.jobs.Cancel(r.Context(), id, actor(r))
	switch {
	case errors.Is(err, dlq.ErrNoJob):
		writeError(w, http.StatusNotFound, CodeNotFound, "", err.Error())
	case errors.Is(err, dlq.ErrJobNotRunning):
		writeJSON(w, http.StatusConflict, errorJSON{Error: "job " + j.ID + " has already ended (" + j.State + ")", Code: CodeJobNotRunning, Job: &j})
	case err != nil:
		s.fail(w, r, err)
	default:
		writeJSON(w, http.StatusOK, struct {
			Job *dlq.Job `json:"job"`
		}{&j})
	}
}
