package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/redrive/redrive/heartbeat"
)

// WorkerPauser pauses and resumes every instance of a worker:
// heartbeat.Pauses over the workers' Redis.
type WorkerPauser interface {
	Pause(ctx context.Context, worker, actor, reason string) (heartbeat.Pause, error)
	Resume(ctx context.Context, worker, actor string) (heartbeat.Pause, error)
}

// WorkerPause is the answer of the pause and resume routes.
type WorkerPause struct {
	Worker string `json:"worker"`
	// Paused is the worker's state after the request.
	Paused bool `json:"paused"`
	// Reason, PausedBy and PausedAt are the pause set (pause) or lifted
	// (resume).
	Reason   string    `json:"reason"`
	PausedBy string    `json:"paused_by"`
	PausedAt time.Time `json:"paused_at"`
	// ResumedBy is the actor of a resume.
	ResumedBy string `json:"resumed_by,omitempty"`
}

// workerName reads and checks the {worker} path segment: a worker name
// is a legal topic name.
func workerName(r *http.Request) (string, error) {
	v := r.PathValue("worker")
	if v == "" || len(v) > 249 || v == "." || v == ".." {
		return "", bad("worker", "%.80q is not a worker name", v)
	}
	for i := range len(v) {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", bad("worker", "%.80q is not a worker name ([a-zA-Z0-9._-])", v)
		}
	}
	return v, nil
}

// pauseWorker serves POST /internal/v1/workers/{worker}/pause, body
// {"reason": …}: every instance of the worker stops taking messages
// within its poll interval, until resumed.
func (s *Server) pauseWorker(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	name, err := workerName(r)
	if err == nil {
		err = readParams(r).err
	}
	if err == nil {
		err = decodeBody(r, &body, false)
	}
	if err == nil {
		if rerr := heartbeat.CheckPauseReason(body.Reason); rerr != nil {
			err = bad("reason", "%s", errors.Unwrap(rerr).Error())
		}
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	if s.cfg.Workers == nil {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "", msgNoWorkers)
		return
	}
	p, err := s.cfg.Workers.Pause(r.Context(), name, actor(r), body.Reason)
	if err != nil {
		s.failWorker(w, r, err)
		return
	}
	s.log.Info("admin: worker paused", "worker", name, "actor", p.Actor, "reason", p.Reason)
	writeJSON(w, http.StatusOK, WorkerPause{Worker: name, Paused: true, Reason: p.Reason, PausedBy: p.Actor, PausedAt: p.At.UTC()})
}

// resumeWorker serves POST /internal/v1/workers/{worker}/resume (no body,
// or an empty JSON object).
func (s *Server) resumeWorker(w http.ResponseWriter, r *http.Request) {
	var body struct{}
	name, err := workerName(r)
	if err == nil {
		err = readParams(r).err
	}
	if err == nil {
		err = decodeBody(r, &body, true)
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	if s.cfg.Workers == nil {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "", msgNoWorkers)
		return
	}
	who := actor(r)
	p, err := s.cfg.Workers.Resume(r.Context(), name, who)
	if err != nil {
		s.failWorker(w, r, err)
		return
	}
	s.log.Info("admin: worker resumed", "worker", name, "actor", who)
	writeJSON(w, http.StatusOK, WorkerPause{Worker: name, Reason: p.Reason, PausedBy: p.Actor, PausedAt: p.At.UTC(), ResumedBy: who})
}

// msgNoWorkers is the 503 of the worker routes on a server without Redis.
const msgNoWorkers = "this server cannot pause workers: no redis configured"

// failWorker maps the errors of WorkerPauser.
func (s *Server) failWorker(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, heartbeat.ErrUnknownType):
		writeError(w, http.StatusNotFound, CodeNotFound, "worker", "no such worker: none of that name ever beat in redis")
	case errors.Is(err, heartbeat.ErrNotPaused):
		writeError(w, http.StatusConflict, CodeNotPaused, "", "the worker is not paused")
	case errors.Is(err, heartbeat.ErrBadReason):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "reason", errors.Unwrap(err).Error())
	case errors.Is(err, heartbeat.ErrBadActor):
		// The authenticated name (a token's, or a proxy's header) cannot
		// be audited as it is.
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "actor", errors.Unwrap(err).Error())
	case errors.Is(err, heartbeat.ErrUnavailable):
		s.log.Warn("admin: worker pause: redis unavailable", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "", "redis cannot be reached; nothing changed")
	default:
		s.fail(w, r, err)
	}
}
