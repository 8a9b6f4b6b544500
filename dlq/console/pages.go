package console

import (
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/download"
)

// fail writes the page of an error: bad input 400 naming the field, the
// dlq sentinels as their status, anything else a 500. The page holds a
// fixed message; the error itself (the store's or the broker's words)
// goes to the log.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, ss *session, err error) {
	var bi *dlq.FieldError
	status, msg := http.StatusInternalServerError, "internal error (logged)"
	switch {
	case errors.As(err, &bi):
		c.errorPage(w, r, ss, http.StatusBadRequest, bi.Error())
		return
	case errors.Is(err, dlq.ErrNotFound):
		status, msg = http.StatusNotFound, "entry: no such entry in this DLQ"
	case errors.Is(err, dlq.ErrNotPending):
		status, msg = http.StatusConflict, "status: the entry is no longer pending (someone replayed or discarded it); reload it"
	case errors.Is(err, dlq.ErrOriginMismatch), errors.Is(err, operate.ErrNoRoute), errors.Is(err, operate.ErrUnknownMessage):
		// The operator must see where the entry claims to come from and
		// where its DLQ replays to (quoted and clipped names; the page
		// escapes them).
		status, msg = http.StatusConflict, "replay refused: "+clip(err.Error(), 1000)
	case errors.Is(err, operate.ErrReasonRequired):
		status, msg = http.StatusBadRequest, "reason: required: say why the entry is discarded"
	case errors.Is(err, dlq.ErrInvalidQuery):
		status, msg = http.StatusBadRequest, "the query is not valid (the log says why)"
	case errors.Is(err, operate.ErrReplayFailed):
		status, msg = http.StatusBadGateway, "broker: the replay was not confirmed; the entry is pending again (the log says why)"
	case errors.Is(err, operate.ErrNoRepublisher):
		status, msg = http.StatusServiceUnavailable, "broker: this console cannot replay: no broker configured"
	case r.Context().Err() != nil:
		status, msg = http.StatusServiceUnavailable, "request cancelled"
	}
	level := c.log.Warn
	if status == http.StatusInternalServerError {
		level = c.log.Error
	}
	level("console: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	c.errorPage(w, r, ss, status, msg)
}

// dlqRow is one line of the DLQ list.
type dlqRow struct {
	operate.DLQInfo
	Retention string
	// LastHour is how many entries arrived in the last hour.
	LastHour int64
}

// dlqs serves GET /: the DLQs with pending counts, severity and arrival
// rate.
func (c *Console) dlqs(w http.ResponseWriter, r *http.Request, ss *session) {
	infos, err := c.ops.DLQs(r.Context())
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	hourAgo := c.now().Add(-time.Hour)
	rows := make([]dlqRow, 0, len(infos))
	var pending int64
	for _, in := range infos {
		row := dlqRow{DLQInfo: in, Retention: duration(in.Retention)}
		if in.Retention == broker.Forever {
			row.Retention = "forever"
		}
		if !in.LastReceived.IsZero() && in.LastReceived.After(hourAgo) {
			if row.LastHour, err = c.ops.Store().Count(r.Context(), dlq.Query{DLQ: in.DLQ, Since: hourAgo}); err != nil {
				c.fail(w, r, ss, err)
				return
			}
		}
		pending += in.Pending
		rows = append(rows, row)
	}
	c.render(w, r, ss, http.StatusOK, "dlqs", "Dead-letter queues", struct {
		Rows    []dlqRow
		Pending int64
	}{rows, pending})
}

// entryRow is one line of the entries table: the record and, when it
// cannot be replayed, why (OriginMismatch: its recorded origin disagrees
// with its DLQ's route).
type entryRow struct {
	dlq.Record
	OriginMismatch bool
	// Unknown marks an entry whose original message is unknown (stored
	// raw): replayed only as stored.
	Unknown bool
	Refused string
}

// entriesView is the entries page's data.
type entriesView struct {
	DLQ      string
	Filter   filter
	Records  []entryRow
	Next     template.URL // the next page, "" on the last
	First    template.URL // the first page of this filter
	Pending  int64
	Statuses []dlq.Status
	Paged    bool
	// Groups are the DLQ's failure groups, shown first when no filter is
	// set (the page opens on them), below the chart of its Arrivals.
	Groups   []groupRow
	Arrivals *arrivalsView
}

// entries serves GET /dlq/{name}: one page of entries, filtered.
func (c *Console) entries(w http.ResponseWriter, r *http.Request, ss *session) {
	name, err := dlqName(r.PathValue("name"))
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	v := r.URL.Query()
	q := dlq.Query{DLQ: name}
	f, err := readFilter(v, &q, true)
	if err == nil {
		q.Cursor, err = one(v, "cursor")
	}
	var rng string
	if err == nil {
		rng, err = readRange(v)
	}
	if err == nil && q.Cursor != "" {
		if cur, cerr := dlq.DecodeCursor(q.Cursor); cerr != nil || cur.NewestFirst != q.NewestFirst {
			err = bad("cursor", "not a cursor of this listing (follow the Next link)")
		}
	}
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	pg, err := c.ops.List(r.Context(), q)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	if len(pg.Records) == 0 && q.Cursor == "" {
		known, err := c.ops.Known(r.Context(), name)
		if err != nil {
			c.fail(w, r, ss, err)
			return
		}
		if !known {
			c.errorPage(w, r, ss, http.StatusNotFound, "dlq: no DLQ named "+clip(name, 120))
			return
		}
	}
	pending, err := c.ops.Store().Count(r.Context(), dlq.Query{DLQ: name, Status: dlq.StatusPending})
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	rows := make([]entryRow, len(pg.Records))
	for i, rec := range pg.Records {
		rows[i] = c.row(rec)
	}
	view := entriesView{DLQ: name, Filter: f, Records: rows, Pending: pending, Statuses: dlq.Statuses, Paged: q.Cursor != ""}
	params := len(v)
	if v.Has("range") {
		params--
	}
	switch {
	case params == 0: // the DLQ page opens on its arrivals and groups
		if view.Groups, err = c.groups(r.Context(), name); err != nil {
			c.fail(w, r, ss, err)
			return
		}
		a, err := c.arrivals(r.Context(), name, "", rng, c.now(), groupLabels(view.Groups))
		if err != nil {
			c.fail(w, r, ss, err)
			return
		}
		view.Arrivals = &a
	case params == 1 && f.Group != "": // a group's entries, below its arrivals
		labels := map[string]string{}
		if len(rows) > 0 {
			e := rows[0].Record.Entry
			labels[f.Group] = e.ErrorClass + " " + dlq.NormalizeMessage(e.ErrorMessage)
		}
		a, err := c.arrivals(r.Context(), name, f.Group, rng, c.now(), labels)
		if err != nil {
			c.fail(w, r, ss, err)
			return
		}
		view.Arrivals = &a
	}
	base := "/dlq/" + pathEscape(name) + "?"
	view.First = template.URL(base + f.Query().Encode()) // #nosec: built from escaped parts
	if pg.Next != "" {
		nv := f.Query()
		nv.Set("cursor", pg.Next)
		view.Next = template.URL(base + nv.Encode())
	}
	c.renderPage(w, r, ss, http.StatusOK, "entries", page{Title: name, Nav: "dlqs", Data: view})
}

// row returns rec's line, with its replay route checked.
func (c *Console) row(rec dlq.Record) entryRow {
	row := entryRow{Record: rec}
	if _, err := c.ops.ReplayRoute(rec); err != nil {
		row.Refused, row.OriginMismatch = err.Error(), errors.Is(err, dlq.ErrOriginMismatch)
		row.Unknown = errors.Is(err, operate.ErrUnknownMessage)
	}
	return row
}

// entryView is the entry page's data.
type entryView struct {
	R       dlq.Record
	Key     payload
	Payload payload
	// Cut is set when Payload shows only the first bytes of the payload
	// (the preview); Download is the URL of the whole payload.
	Cut      bool
	Download string
	Headers  []header
	// Typed is set when Headers come from the exact wire form (with
	// types); Props are its properties (RabbitMQ).
	Typed bool
	Props []header
	// Destination is where a replay goes (dlq.Route.Destination);
	// EveryGroup is set when every group of the topic receives it, not
	// only the worker that failed. Refused says why the entry cannot be
	// replayed (OriginMismatch: its recorded origin disagrees with its
	// DLQ's route; Unknown: its original message is unknown, and
	// Destination is where a replay as stored goes).
	Destination    string
	EveryGroup     bool
	Refused        string
	OriginMismatch bool
	Unknown        bool
	Audit          []dlq.AuditEntry
	// TraceID is the trace id of the message's valid W3C traceparent
	// header, TraceURL its link (Config.TraceLink); empty without.
	TraceID  string
	TraceURL string
}

// entry serves GET /dlq/{name}/{id}.
func (c *Console) entry(w http.ResponseWriter, r *http.Request, ss *session) {
	name, err := dlqName(r.PathValue("name"))
	var id string
	if err == nil {
		id, err = entryID("id", r.PathValue("id"))
	}
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	rec, trail, err := c.ops.Show(r.Context(), name, id)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	e := rec.Entry
	view := entryView{R: rec, Key: renderPayload(e.OriginalKey), Payload: renderPayload(e.OriginalValue),
		Cut: int64(len(e.OriginalValue)) < rec.ValueSize, Download: entryURL(name, id) + "/payload",
		Headers: sortedHeaders(e.OriginalHeaders), Audit: trail, TraceID: traceID(e.OriginalHeaders)}
	view.TraceURL = traceURL(c.cfg.TraceLink, view.TraceID)
	view.Payload.Bytes = rec.ValueSize
	if hs, props, ok := typedHeaders(e.OriginalWire); ok {
		view.Headers, view.Props, view.Typed = hs, props, true
	}
	rt, err := c.ops.ReplayRoute(rec)
	if err != nil {
		view.Refused, view.OriginMismatch = err.Error(), errors.Is(err, dlq.ErrOriginMismatch)
		view.Unknown = errors.Is(err, operate.ErrUnknownMessage)
	}
	if err == nil || view.Unknown {
		view.Destination, view.EveryGroup = rt.Destination(rec.Broker), rt.EveryGroup
	}
	c.renderPage(w, r, ss, http.StatusOK, "entry", page{Title: name + " / " + id, Nav: "dlqs", Data: view})
}

// payload serves GET /dlq/{name}/{id}/payload: the whole payload, raw, as
// an attachment, streamed from the store a chunk at a time (the entry page
// shows at most the preview).
func (c *Console) payload(w http.ResponseWriter, r *http.Request, ss *session) {
	name, id, err := pathEntry(r)
	if err != nil {
		c.fail(w, r, ss, err)
		return
	}
	started, err := download.Payload(r.Context(), w, c.ops, name, id)
	switch {
	case err == nil:
	case !started:
		c.fail(w, r, ss, err)
	default:
		c.log.Error("console: payload download failed", "entry", dlq.ReplayedFrom(name, id), "error", err)
	}
}
