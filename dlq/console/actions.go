package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/redrive/redrive/dlq"
)

// pathEntry reads {name} and {id}.
func pathEntry(r *http.Request) (string, string, error) {
	name, err := dlqName(r.PathValue("name"))
	if err != nil {
		return "", "", err
	}
	id, err := entryID("id", r.PathValue("id"))
	return name, id, err
}

// entryURL is the page of entry id of name.
func entryURL(name, id string) string {
	return "/dlq/" + pathEscape(name) + "/" + pathEscape(id)
}

// replay serves POST /dlq/{name}/{id}/replay, then shows the entry. The
// field as_stored ("on": the operator ticked "send the stored bytes as
// they are") replays an entry whose original message is unknown
// (operate.Ops.ReplayAsStored); without it such an entry is refused.
func (c *Console) replay(w http.ResponseWriter, r *http.Request, ss *session) {
	name, id, err := pathEntry(r)
	asStored := false
	if err == nil {
		var v string
		if v, err = one(r.PostForm, "as_stored"); err == nil {
			switch v {
			case "":
			case "on":
				asStored = true
			default:
				err = bad("as_stored", "must be on or absent")
			}
		}
	}
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	replay := c.ops.Replay
	if asStored {
		replay = c.ops.ReplayAsStored
	}
	if _, err := replay(r.Context(), name, id, ss.user.Name); err != nil {
		c.fail(w, r, ss, err)
		return
	}
	c.log.Info("console: replayed", "dlq", name, "id", id, "user", ss.user.Name, "as_stored", asStored)
	http.Redirect(w, r, entryURL(name, id), http.StatusSeeOther)
}

// discard serves POST /dlq/{name}/{id}/discard (field reason, required),
// then shows the entry.
func (c *Console) discard(w http.ResponseWriter, r *http.Request, ss *session) {
	name, id, err := pathEntry(r)
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	switch {
	case err != nil:
	case reason == "":
		err = bad("reason", "required: say why the entry is discarded")
	default:
		err = dlq.CheckText("reason", reason, dlq.MaxReasonLen, true)
	}
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	if _, err := c.ops.Discard(r.Context(), name, id, ss.user.Name, reason); err != nil {
		c.fail(w, r, ss, err)
		return
	}
	c.log.Info("console: discarded", "dlq", name, "id", id, "user", ss.user.Name)
	http.Redirect(w, r, entryURL(name, id), http.StatusSeeOther)
}

// replayAll serves POST /dlq/{name}/replay-all (fields error_class, q,
// group, since, until, rate): it starts a job and shows its progress page.
func (c *Console) replayAll(w http.ResponseWriter, r *http.Request, ss *session) {
	c.startJob(w, r, ss, false)
}

// discardAll serves POST /dlq/{name}/discard-all: as replayAll, with a
// reason (required) for every entry's audit row.
func (c *Console) discardAll(w http.ResponseWriter, r *http.Request, ss *session) {
	c.startJob(w, r, ss, true)
}

// startJob reads the form of replay-all or discard-all and starts the job.
func (c *Console) startJob(w http.ResponseWriter, r *http.Request, ss *session, discard bool) {
	name, err := dlqName(r.PathValue("name"))
	q := dlq.Query{DLQ: name, Status: dlq.StatusPending}
	if err == nil {
		_, err = readFilter(r.PostForm, &q, false)
	}
	rate := -1.0
	if err == nil {
		var s string
		if s, err = one(r.PostForm, "rate"); err == nil {
			rate, err = parseRate(s)
		}
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	switch {
	case err != nil || !discard:
	case reason == "":
		err = bad("reason", "required: say why the entries are discarded")
	default:
		err = dlq.CheckText("reason", reason, dlq.MaxReasonLen, true)
	}
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	var j dlq.Job
	if discard {
		j, err = c.cfg.Jobs.StartDiscardAll(r.Context(), q, ss.user.Name, reason, rate)
	} else {
		j, err = c.cfg.Jobs.StartReplayAll(r.Context(), q, ss.user.Name, rate)
	}
	switch {
	case errors.Is(err, dlq.ErrJobRunning):
		c.log.Info("console: replay-all already running", "dlq", name, "job", j.ID)
	case errors.Is(err, dlq.ErrUnknownDLQ):
		c.errorPage(w, r, ss, http.StatusNotFound, "dlq: no DLQ named "+clip(name, 120))
		return
	case errors.Is(err, dlq.ErrShuttingDown):
		c.errorPage(w, r, ss, http.StatusServiceUnavailable, "the server is shutting down")
		return
	case err != nil:
		c.fail(w, r, ss, err)
		return
	default:
		c.log.Info("console: job started", "kind", j.Kind, "dlq", name, "job", j.ID, "user", ss.user.Name)
	}
	http.Redirect(w, r, "/jobs/"+pathEscape(j.ID), http.StatusSeeOther)
}

// noJob is the message of an unknown job.
const noJob = "job: no such job (the last finished jobs are kept; with the in-memory job store, until the server restarts)"

// job serves GET /jobs/{id}: a replay-all's progress, refreshed every 2 s
// while it runs, with a cancel button for operators.
func (c *Console) job(w http.ResponseWriter, r *http.Request, ss *session) {
	id, err := entryID("job", r.PathValue("id"))
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	j, err := dlq.Job{}, dlq.ErrNoJob
	if c.cfg.Jobs != nil {
		j, err = c.cfg.Jobs.Lookup(r.Context(), id)
	}
	if errors.Is(err, dlq.ErrNoJob) {
		c.errorPage(w, r, ss, http.StatusNotFound, noJob)
		return
	}
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	p := page{Title: "Replay-all " + j.DLQ, Nav: "jobs", Data: j}
	if j.State == dlq.JobRunning {
		p.Refresh = 2
	}
	c.renderPage(w, r, ss, http.StatusOK, "job", p)
}

// jobs serves GET /jobs: the replay-all jobs, newest first.
func (c *Console) jobs(w http.ResponseWriter, r *http.Request, ss *session) {
	var list []dlq.Job
	if c.cfg.Jobs != nil {
		var err error
		if list, err = c.cfg.Jobs.ListJobs(r.Context()); err != nil {
			c.fail(w, r, ss, err)
			return
		}
	}
	p := page{Title: "Replay-all jobs", Nav: "jobs", Data: list}
	for _, j := range list {
		if j.State == dlq.JobRunning {
			p.Refresh = 5
		}
	}
	c.renderPage(w, r, ss, http.StatusOK, "jobs", p)
}

// cancelJob serves POST /jobs/{id}/cancel: it stops a running replay-all
// (recording who did) and shows the job.
func (c *Console) cancelJob(w http.ResponseWriter, r *http.Request, ss *session) {
	id, err := entryID("job", r.PathValue("id"))
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	_, err = c.cfg.Jobs.Cancel(r.Context(), id, ss.user.Name)
	switch {
	case errors.Is(err, dlq.ErrNoJob):
		c.errorPage(w, r, ss, http.StatusNotFound, noJob)
		return
	case errors.Is(err, dlq.ErrJobNotRunning):
		c.log.Info("console: cancel of a job that has ended", "job", id, "user", ss.user.Name)
	case err != nil:
		c.fail(w, r, ss, err)
		return
	default:
		c.log.Info("console: replay-all cancelled", "job", id, "user", ss.user.Name)
	}
	http.Redirect(w, r, "/jobs/"+pathEscape(id), http.StatusSeeOther)
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }
