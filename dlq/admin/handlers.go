package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/download"
)

// dlqName reads and checks a DLQ name.
func dlqName(param, v string) (string, error) {
	if v == "" {
		return "", bad(param, "required")
	}
	if !dlq.ValidName(v) {
		return "", bad(param, "%.80q is not a DLQ name", v)
	}
	return v, nil
}

// entryID reads and checks an entry id.
func entryID(param, v string) (string, error) {
	if v == "" {
		return "", bad(param, "required")
	}
	if !dlq.ValidID(v) {
		return "", bad(param, "%.80q is not an entry id ([A-Za-z0-9][A-Za-z0-9._-]{0,127})", v)
	}
	return v, nil
}

// params reads query parameters, refusing unknown and repeated ones.
type params struct {
	v   url.Values
	err error
}

func readParams(r *http.Request, allowed ...string) *params {
	v, err := url.ParseQuery(r.URL.RawQuery)
	p := &params{v: v}
	if err != nil {
		p.err = bad("query", "malformed query string")
		return p
	}
	for k, vs := range v {
		switch {
		case !slices.Contains(allowed, k):
			p.err = unknownParam(k, allowed)
		case len(vs) > 1:
			p.err = bad(k, "given %d times", len(vs))
		}
		if p.err != nil {
			return p
		}
	}
	return p
}

// unknownParam is the error of a query parameter k the endpoint does not
// take, naming the ones it does.
func unknownParam(k string, allowed []string) error {
	if len(allowed) == 0 {
		return bad(k, "unknown parameter: this endpoint takes no query parameters")
	}
	return bad(k, "unknown parameter (allowed: %s)", strings.Join(allowed, ", "))
}

func (p *params) str(name string) string { return p.v.Get(name) }

// filter reads the filter parameters into q (dlq.Filter.Apply); the
// listing gives status and order too.
func (p *params) filter(q *dlq.Query) {
	if p.err == nil {
		p.err = dlq.Filter{Status: p.str("status"), ErrorClass: p.str("error_class"), Text: p.str("q"), Group: p.str("group"),
			Since: p.str("since"), Until: p.str("until"), Order: p.str("order")}.Apply(q)
	}
}

// listDLQs serves GET /internal/v1/dlq.
func (s *Server) listDLQs(w http.ResponseWriter, r *http.Request) {
	if p := readParams(r); p.err != nil {
		s.reject(w, r, p.err)
		return
	}
	infos, err := s.ops.DLQs(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		DLQs []DLQ `json:"dlqs"`
	}{DLQs: make([]DLQ, 0, len(infos))}
	for _, in := range infos {
		out.DLQs = append(out.DLQs, toDLQ(in))
	}
	writeJSON(w, http.StatusOK, out)
}

// listEntries serves GET /internal/v1/dlq/{topic}.
func (s *Server) listEntries(w http.ResponseWriter, r *http.Request) {
	q, err := s.parseList(r)
	if err != nil {
		s.reject(w, r, err)
		return
	}
	page, err := s.ops.List(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(page.Records) == 0 && q.Cursor == "" {
		known, err := s.ops.Known(r.Context(), q.DLQ)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !known {
			writeError(w, http.StatusNotFound, CodeNotFound, "", fmt.Sprintf("no DLQ named %q (see GET /internal/v1/dlq)", q.DLQ))
			return
		}
	}
	out := struct {
		DLQ        string  `json:"dlq"`
		Entries    []Entry `json:"entries"`
		NextCursor string  `json:"next_cursor,omitempty"`
	}{DLQ: q.DLQ, Entries: make([]Entry, 0, len(page.Records)), NextCursor: page.Next}
	for _, rec := range page.Records {
		out.Entries = append(out.Entries, toEntry(rec, s.ops.ReplayRoute))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) parseList(r *http.Request) (dlq.Query, error) {
	var q dlq.Query
	var err error
	if q.DLQ, err = dlqName("topic", r.PathValue("topic")); err != nil {
		return q, err
	}
	p := readParams(r, "status", "error_class", "q", "group", "since", "until", "cursor", "limit", "order")
	if p.err != nil {
		return q, p.err
	}
	q.NewestFirst = true // the default order
	if p.filter(&q); p.err != nil {
		return q, p.err
	}
	if l := p.str("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > dlq.MaxLimit {
			return q, bad("limit", "%.40q is not a number from 1 to %d", l, dlq.MaxLimit)
		}
		q.Limit = n
	}
	if c := p.str("cursor"); c != "" {
		cur, err := dlq.DecodeCursor(c)
		if err != nil {
			return q, bad("cursor", "not a cursor of this listing (use next_cursor as given)")
		}
		if cur.NewestFirst != q.NewestFirst {
			return q, bad("cursor", "this cursor belongs to the other order")
		}
		q.Cursor = c
	}
	return q, nil
}

// pathEntry reads {topic} and {id}.
func pathEntry(r *http.Request) (string, string, error) {
	name, err := dlqName("topic", r.PathValue("topic"))
	if err != nil {
		return "", "", err
	}
	id, err := entryID("id", r.PathValue("id"))
	return name, id, err
}

// showEntry serves GET /internal/v1/dlq/{topic}/{id}.
func (s *Server) showEntry(w http.ResponseWriter, r *http.Request) {
	name, id, err := pathEntry(r)
	if err == nil {
		err = readParams(r).err
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	rec, trail, err := s.ops.Show(r.Context(), name, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toDetail(rec, trail, s.ops.ReplayRoute))
}

// payload serves GET /internal/v1/dlq/{topic}/{id}/payload: the entry's
// whole payload, raw, as an attachment, streamed from the store a chunk at
// a time. An entry without a payload (nil, not empty) is 204.
func (s *Server) payload(w http.ResponseWriter, r *http.Request) {
	name, id, err := pathEntry(r)
	if err == nil {
		err = readParams(r).err
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	started, err := download.Payload(r.Context(), w, s.ops, name, id)
	switch {
	case err == nil:
	case !started:
		s.fail(w, r, err)
	default:
		// The status is sent: a short body (Content-Length) tells the
		// client the download failed.
		s.log.Error("admin: payload download failed", "entry", dlq.ReplayedFrom(name, id), "error", err)
	}
}

// decodeBody reads a JSON object into v; an empty body is allowed when
// optional. Unknown fields are refused.
func decodeBody(r *http.Request, v any, optional bool) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err // *http.MaxBytesError → 413
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if optional {
			return nil
		}
		return bad("body", "a JSON object is required")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if dec.More() {
		return bad("body", "trailing data after the JSON object")
	}
	return nil
}

// replay serves POST /internal/v1/dlq/replay, body {"topic": …, "id": …,
// "as_stored": false}: as_stored sends the stored bytes of an entry whose
// original message is unknown (operate.Ops.ReplayAsStored), which is refused
// without it (409 unknown_message).
func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Topic    string `json:"topic"`
		ID       string `json:"id"`
		AsStored bool   `json:"as_stored"`
	}
	err := readParams(r).err
	if err == nil {
		err = decodeBody(r, &body, false)
	}
	if err == nil {
		body.Topic, err = dlqName("topic", body.Topic)
	}
	if err == nil {
		body.ID, err = entryID("id", body.ID)
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	replay := s.ops.Replay
	if body.AsStored {
		replay = s.ops.ReplayAsStored
	}
	rec, err := replay(r.Context(), body.Topic, body.ID, actor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Entry Entry `json:"entry"`
	}{toEntry(rec, s.ops.ReplayRoute)})
}

// discard serves DELETE /internal/v1/dlq/{topic}/{id}; the reason comes
// from the query (reason=…) or the body {"reason": …}.
// checkReason checks a discard's reason, given in the body or in the
// query (not both, one required, at most dlq.MaxReasonLen bytes); what
// says what it explains.
func checkReason(inBody, inQuery, what string) error {
	reason := inBody + inQuery
	switch {
	case inBody != "" && inQuery != "":
		return bad("reason", "given both in the query and in the body")
	case strings.TrimSpace(reason) == "":
		return bad("reason", "required: say why %s", what)
	}
	return dlq.CheckText("reason", reason, dlq.MaxReasonLen, true)
}

func (s *Server) discard(w http.ResponseWriter, r *http.Request) {
	name, id, err := pathEntry(r)
	var body struct {
		Reason string `json:"reason"`
	}
	p := readParams(r, "reason")
	if err == nil {
		err = p.err
	}
	if err == nil {
		err = decodeBody(r, &body, true)
	}
	reason := body.Reason + p.str("reason")
	if err == nil {
		err = checkReason(body.Reason, p.str("reason"), "the entry is discarded")
	}
	if err != nil {
		s.reject(w, r, err)
		return
	}
	rec, err := s.ops.Discard(r.Context(), name, id, actor(r), reason)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Entry Entry `json:"entry"`
	}{toEntry(rec, s.ops.ReplayRoute)})
}
