package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/redrive/redrive/dlq"
)

// Group is a failure group in the API's JSON (dlq.Group).
type Group struct {
	Fingerprint string    `json:"fingerprint"`
	Message     string    `json:"message"`
	ErrorClass  string    `json:"error_class"`
	Worker      string    `json:"worker"`
	Count       int64     `json:"count"`
	Pending     int64     `json:"pending"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	SampleID    string    `json:"sample_id"`
	// Hourly counts the arrivals of each of the last 24 hours, oldest
	// first, from the answer's hourly_since.
	Hourly []int64 `json:"hourly"`
}

// groups serves GET /internal/v1/dlq/{topic}/groups.
func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	name, err := dlqName("topic", r.PathValue("topic"))
	p := readParams(r, "limit")
	if err == nil {
		err = p.err
	}
	q := dlq.GroupQuery{DLQ: name, Now: time.Now()}
	if l := p.str("limit"); err == nil && l != "" {
		n, perr := strconv.Atoi(l)
		if perr != nil || n < 1 || n > dlq.MaxGroupLimit {
			err = bad("limit", "%.40q is not a number from 1 to %d", l, dlq.MaxGroupLimit)
		}
		q.Limit = n
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	gs, err := s.ops.Groups(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(gs) == 0 {
		known, err := s.ops.Known(r.Context(), name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !known {
			writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no DLQ named %q (see GET /internal/v1/dlq)", name))
			return
		}
	}
	out := struct {
		DLQ         string    `json:"dlq"`
		HourlySince time.Time `json:"hourly_since"`
		Groups      []Group   `json:"groups"`
	}{DLQ: name, HourlySince: dlq.SparklineStart(q.Now), Groups: make([]Group, 0, len(gs))}
	for _, g := range gs {
		out.Groups = append(out.Groups, Group{
			Fingerprint: g.Fingerprint, Message: g.Message, ErrorClass: g.ErrorClass, Worker: g.Worker,
			Count: g.Count, Pending: g.Pending, FirstSeen: g.FirstSeen.UTC(), LastSeen: g.LastSeen.UTC(),
			SampleID: g.SampleID, Hourly: g.Hourly[:],
		})
	}
	writeJSON(w, http.StatusOK, out)
}
