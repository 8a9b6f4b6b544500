package console

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/redrive/redrive/heartbeat"
)

// WorkerPauser pauses and resumes every instance of a worker
// (heartbeat.Pauses over the workers' Redis).
type WorkerPauser interface {
	Pause(ctx context.Context, worker, actor, reason string) (heartbeat.Pause, error)
	Resume(ctx context.Context, worker, actor string) (heartbeat.Pause, error)
}

// workerParam checks the {worker} of a path: a legal worker name.
func workerParam(v string) (string, error) {
	if v == "" || len(v) > 249 || v == "." || v == ".." || strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return "", bad("worker", "not a worker name")
	}
	return v, nil
}

// pauseWorker serves POST /workers/{worker}/pause (field reason).
func (c *Console) pauseWorker(w http.ResponseWriter, r *http.Request, ss *session) {
	name, err := workerParam(r.PathValue("worker"))
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if err == nil {
		if rerr := heartbeat.CheckPauseReason(reason); rerr != nil {
			err = bad("reason", "%s", errors.Unwrap(rerr).Error())
		}
	}
	if err == nil && c.cfg.Pauser == nil {
		err = errNoPauser
	}
	if err == nil {
		_, err = c.cfg.Pauser.Pause(r.Context(), name, ss.user.Name, reason)
	}
	if err != nil {
		c.failWorker(w, r, ss, err)
		return
	}
	c.log.Info("console: worker paused", "worker", name, "user", ss.user.Name, "reason", reason)
	http.Redirect(w, r, "/workers", http.StatusSeeOther)
}

// resumeWorker serves POST /workers/{worker}/resume.
func (c *Console) resumeWorker(w http.ResponseWriter, r *http.Request, ss *session) {
	name, err := workerParam(r.PathValue("worker"))
	if err == nil && c.cfg.Pauser == nil {
		err = errNoPauser
	}
	if err == nil {
		_, err = c.cfg.Pauser.Resume(r.Context(), name, ss.user.Name)
	}
	if err != nil {
		c.failWorker(w, r, ss, err)
		return
	}
	c.log.Info("console: worker resumed", "worker", name, "user", ss.user.Name)
	http.Redirect(w, r, "/workers", http.StatusSeeOther)
}

var errNoPauser = errors.New("console: no worker pauser")

func (c *Console) failWorker(w http.ResponseWriter, r *http.Request, ss *session, err error) {
	switch {
	case errors.Is(err, errNoPauser):
		c.errorPage(w, r, ss, http.StatusServiceUnavailable, "this console cannot pause workers: no redis configured")
	case errors.Is(err, heartbeat.ErrUnknownType):
		c.errorPage(w, r, ss, http.StatusNotFound, "worker: no worker of that name ever beat in redis")
	case errors.Is(err, heartbeat.ErrNotPaused):
		c.errorPage(w, r, ss, http.StatusConflict, "the worker is not paused; reload the page")
	case errors.Is(err, heartbeat.ErrBadActor):
		c.errorPage(w, r, ss, http.StatusBadRequest, "your name cannot be audited as it is: "+errors.Unwrap(err).Error())
	case errors.Is(err, heartbeat.ErrUnavailable):
		c.log.Warn("console: worker pause: redis unavailable", "err", err)
		c.errorPage(w, r, ss, http.StatusServiceUnavailable, "redis cannot be reached; nothing changed")
	default:
		c.fail(w, r, ss, err)
	}
}

// pausedTypes returns the worker types of rows whose instances an operator
// paused: the workers page offers Resume for them, Pause for the others.
func pausedTypes(rows []heartbeat.WorkerStatus) map[string]bool {
	out := map[string]bool{}
	for _, r := range rows {
		if r.Status == heartbeat.StatusPaused && r.PausedBy == heartbeat.PausedByOperator {
			out[r.Type] = true
		}
	}
	return out
}
