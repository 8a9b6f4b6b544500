package admin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/preview"
)

// Payload encodings of the entry view.
const (
	// EncodingJSON: the payload is valid JSON nested at most
	// MaxPayloadDepth levels, shown as a JSON value (compacted: the bytes
	// themselves are the download's, PayloadURL).
	EncodingJSON = "json"
	// EncodingUTF8: the payload is UTF-8 text, shown as a JSON string.
	EncodingUTF8 = "utf8"
	// EncodingBase64: any other bytes, shown as standard base64.
	EncodingBase64 = "base64"
)

// writeJSON writes v with status. The encoder writes its whole text in
// one Write, once v is encoded: the status goes out with it, and a value
// that does not encode is a 500 instead; the text is not copied again
// (an entry's payload preview may be megabytes).
func writeJSON(w http.ResponseWriter, status int, v any) {
	enc := json.NewEncoder(&statusWriter{w: w, status: status})
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		(&statusWriter{w: w, status: http.StatusInternalServerError}).Write([]byte(`{"error":"internal error: encoding the response","code":"internal"}` + "\n"))
	}
}

// statusWriter writes the JSON headers and its status before the body.
type statusWriter struct {
	w      http.ResponseWriter
	status int
}

func (s *statusWriter) Write(b []byte) (int, error) {
	h := s.w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	s.w.WriteHeader(s.status)
	return s.w.Write(b)
}

// Entry is an entry as listings show it: everything but the payload,
// key, headers and stack trace.
type Entry struct {
	ID                string     `json:"id"`
	DLQ               string     `json:"dlq"`
	Broker            string     `json:"broker"`
	Status            dlq.Status `json:"status"`
	Severity          string     `json:"severity"`
	ReceivedAt        time.Time  `json:"received_at"`
	StatusChangedAt   time.Time  `json:"status_changed_at"`
	StatusBy          string     `json:"status_by,omitempty"`
	MessageID         string     `json:"message_id,omitempty"`
	OriginalTopic     string     `json:"original_topic,omitempty"`
	OriginalPartition *int32     `json:"original_partition,omitempty"`
	OriginalOffset    *int64     `json:"original_offset,omitempty"`
	Source            string     `json:"source,omitempty"`
	ErrorClass        string     `json:"error_class"`
	ErrorMessage      string     `json:"error_message"`
	Reason            string     `json:"reason"`
	RetryCount        int        `json:"retry_count"`
	Worker            string     `json:"worker,omitempty"`
	WorkerInstance    string     `json:"worker_instance,omitempty"`
	FirstFailureAt    *time.Time `json:"first_failure_at,omitempty"`
	LastFailureAt     *time.Time `json:"last_failure_at,omitempty"`
	PayloadBytes      int64      `json:"payload_bytes"`
	// ReplayDestination is where a replay of the entry goes, named as the
	// console, the CLI and the audit log name it (dlq.Route.Destination):
	// "queue escrow.commands.payout-executor (worker payout-executor)",
	// "topic escrow.commands (every consumer group of it, worker
	// payout-executor among them)". It comes from the configuration (the
	// route of the entry's DLQ); empty when the entry cannot be replayed
	// (ReplayRefused says why; for an unknown message it is where a
	// replay as stored goes).
	ReplayDestination string `json:"replay_destination,omitempty"`
	// OriginMismatch marks an entry whose recorded origin (worker, topic,
	// source) disagrees with the route of the DLQ it sits in: it is
	// refused on replay (409) and skipped by replay-all.
	OriginMismatch bool `json:"origin_mismatch,omitempty"`
	// ReplayEveryGroup is set when a replay reaches every group of the
	// topic, not only the worker that failed: the route of a worker
	// declared foreign (workers[].foreign: it consumes the topic itself)
	// or of a foreign DLQ topic (kafka.foreign_dlqs[].replay_to).
	ReplayEveryGroup bool `json:"replay_every_group,omitempty"`
	// ReplayRefused says why a replay of the entry would be refused:
	// the origin mismatch, no configured worker for its DLQ, or an
	// unknown message.
	ReplayRefused string `json:"replay_refused,omitempty"`
	// MessageUnknown marks an entry whose original message is unknown (it
	// was stored raw, reason unparseable): a replay is refused (409
	// unknown_message) unless the request says "as_stored": true, which
	// sends its stored bytes as they are to ReplayDestination.
	MessageUnknown bool `json:"message_unknown,omitempty"`
}

// Detail is one entry with its payload and audit trail.
type Detail struct {
	Entry
	StackTrace string `json:"stack_trace,omitempty"`
	// Key is null for no key; KeyEncoding utf8 or base64.
	Key         *string `json:"key"`
	KeyEncoding string  `json:"key_encoding,omitempty"`
	// Payload is null for no payload; PayloadEncoding json, utf8 or
	// base64. At most the server's payload preview
	// (dlq.max_payload_preview) is shown: PayloadTruncated is then set, and
	// PayloadURL downloads the whole payload.
	Payload          json.RawMessage `json:"payload"`
	PayloadEncoding  string          `json:"payload_encoding,omitempty"`
	PayloadTruncated bool            `json:"payload_truncated,omitempty"`
	PayloadURL       string          `json:"payload_url"`
	// Headers are the application's headers as strings; HeadersBase64
	// names those whose value is shown in base64 (not UTF-8).
	Headers       map[string]string `json:"headers,omitempty"`
	HeadersBase64 []string          `json:"headers_base64,omitempty"`
	// Wire is the exact form of the original message: every header with
	// its type, in wire order, and (RabbitMQ) the properties; absent for
	// entries stored without it.
	Wire  *wire.View `json:"wire,omitempty"`
	Audit []Audit    `json:"audit"`
}

// Audit is one audit-log row of an entry.
type Audit struct {
	At     time.Time  `json:"at"`
	Actor  string     `json:"actor"`
	Action string     `json:"action"`
	From   dlq.Status `json:"from"`
	To     dlq.Status `json:"to"`
	Reason string     `json:"reason,omitempty"`
}

// toEntry renders r; route gives its replay route or why a replay is
// refused (operate.Ops.ReplayRoute).
func toEntry(r dlq.Record, route func(dlq.Record) (dlq.Route, error)) Entry {
	e := r.Entry
	out := Entry{
		ID: r.ID, DLQ: r.DLQ, Broker: string(r.Broker), Status: r.Status, Severity: r.Severity,
		ReceivedAt: r.ReceivedAt, StatusChangedAt: r.StatusChangedAt, StatusBy: r.StatusBy,
		MessageID: e.MessageID, OriginalTopic: e.OriginalTopic, Source: e.Source,
		ErrorClass: e.ErrorClass, ErrorMessage: e.ErrorMessage, Reason: e.Reason, RetryCount: e.RetryCount,
		Worker: e.Worker, WorkerInstance: e.WorkerInstance, PayloadBytes: r.ValueSize,
	}
	rt, err := route(r)
	if err != nil {
		out.ReplayRefused, out.OriginMismatch = err.Error(), errors.Is(err, dlq.ErrOriginMismatch)
		out.MessageUnknown = errors.Is(err, operate.ErrUnknownMessage)
	}
	if err == nil || out.MessageUnknown {
		out.ReplayDestination, out.ReplayEveryGroup = rt.Destination(r.Broker), rt.EveryGroup
	}
	if e.OriginalPartition >= 0 && e.OriginalOffset >= 0 {
		out.OriginalPartition, out.OriginalOffset = &e.OriginalPartition, &e.OriginalOffset
	}
	if !e.FirstFailureAt.IsZero() {
		out.FirstFailureAt = &e.FirstFailureAt
	}
	if !e.LastFailureAt.IsZero() {
		out.LastFailureAt = &e.LastFailureAt
	}
	return out
}

// payloadPath is the URL of the whole payload of entry id of dlqName.
func payloadPath(dlqName, id string) string {
	return "/internal/v1/dlq/" + url.PathEscape(dlqName) + "/" + url.PathEscape(id) + "/payload"
}

// toDetail renders r, read by Ops.Show (its payload a preview).
func toDetail(r dlq.Record, trail []dlq.AuditEntry, route func(dlq.Record) (dlq.Route, error)) Detail {
	e := r.Entry
	out := Detail{Entry: toEntry(r, route), StackTrace: e.StackTrace, Audit: make([]Audit, 0, len(trail)),
		PayloadURL: payloadPath(r.DLQ, r.ID)}
	if e.OriginalKey != nil {
		k, enc := string(e.OriginalKey), EncodingUTF8
		if !utf8.Valid(e.OriginalKey) {
			k, enc = base64.StdEncoding.EncodeToString(e.OriginalKey), EncodingBase64
		}
		out.Key, out.KeyEncoding = &k, enc
	}
	if e.OriginalValue != nil {
		out.PayloadTruncated = int64(len(e.OriginalValue)) < r.ValueSize
		if out.PayloadTruncated {
			// A cut payload is not JSON, and may end inside a UTF-8
			// sequence: shown as text when it is text up to the cut.
			v := e.OriginalValue
			if text := completeRunes(v); utf8.Valid(text) {
				b, _ := json.Marshal(string(text))
				out.Payload, out.PayloadEncoding = b, EncodingUTF8
			} else {
				b, _ := json.Marshal(base64.StdEncoding.EncodeToString(v))
				out.Payload, out.PayloadEncoding = b, EncodingBase64
			}
		} else {
			out.Payload, out.PayloadEncoding = renderPayload(e.OriginalValue)
		}
	}
	if e.OriginalHeaders != nil {
		out.Headers = make(map[string]string, len(e.OriginalHeaders))
		for k, v := range e.OriginalHeaders {
			if !utf8.ValidString(v) {
				v = base64.StdEncoding.EncodeToString([]byte(v))
				out.HeadersBase64 = append(out.HeadersBase64, k)
			}
			out.Headers[k] = v
		}
	}
	if e.OriginalWire != nil {
		if f, err := wire.Decode(e.OriginalWire); err == nil {
			v := f.View()
			out.Wire = &v
		}
	}
	for _, a := range trail {
		out.Audit = append(out.Audit, Audit{At: a.At, Actor: a.Actor, Action: a.Action, From: a.From, To: a.To, Reason: a.Reason})
	}
	return out
}

// completeRunes returns v without an incomplete UTF-8 sequence at its end
// (a cut in the middle of a character).
func completeRunes(v []byte) []byte {
	for i := len(v) - 1; i >= 0 && i > len(v)-utf8.UTFMax; i-- {
		if utf8.RuneStart(v[i]) {
			if !utf8.FullRune(v[i:]) {
				return v[:i]
			}
			break
		}
	}
	return v
}

// MaxPayloadDepth is the deepest JSON payload an entry embeds as JSON
// (payload_encoding json); a deeper one is given as its text (utf8), so
// that the answer stays readable by clients whose JSON readers stop at
// 1,000 levels (Jackson, Python) and costs what its size costs.
const MaxPayloadDepth = 512

// renderPayload shows v as JSON when it is UTF-8 JSON nested at most
// MaxPayloadDepth levels, else as a UTF-8 string, else as base64. It
// reads v once, allocating nothing for its nesting (preview.Scan).
func renderPayload(v []byte) (json.RawMessage, string) {
	if utf8.Valid(v) {
		if depth, ok := preview.Scan(v); ok && depth <= MaxPayloadDepth {
			return json.RawMessage(v), EncodingJSON
		}
	}
	var s string
	enc := EncodingUTF8
	if utf8.Valid(v) {
		s = string(v)
	} else {
		s, enc = base64.StdEncoding.EncodeToString(v), EncodingBase64
	}
	b, _ := json.Marshal(s) // a string always encodes
	return b, enc
}

// DLQ is a DLQ as GET /internal/v1/dlq lists it.
type DLQ struct {
	DLQ             string     `json:"dlq"`
	Broker          string     `json:"broker,omitempty"`
	Severity        string     `json:"severity"`
	Pending         int64      `json:"pending"`
	Replaying       int64      `json:"replaying"`
	Replayed        int64      `json:"replayed"`
	Discarded       int64      `json:"discarded"`
	Archived        int64      `json:"archived"`
	OldestPendingAt *time.Time `json:"oldest_pending_at,omitempty"`
	LastReceivedAt  *time.Time `json:"last_received_at,omitempty"`
	// Retention is a Go duration ("720h0m0s") or "forever".
	Retention  string `json:"retention"`
	Configured bool   `json:"configured"`
}

func toDLQ(in operate.DLQInfo) DLQ {
	out := DLQ{
		DLQ: in.DLQ, Broker: in.Broker, Severity: in.Severity,
		Pending: in.Pending, Replaying: in.Replaying, Replayed: in.Replayed, Discarded: in.Discarded, Archived: in.Archived,
		Retention: in.Retention.String(), Configured: in.Configured,
	}
	if in.Retention == broker.Forever {
		out.Retention = "forever"
	}
	if !in.OldestPending.IsZero() {
		out.OldestPendingAt = &in.OldestPending
	}
	if !in.LastReceived.IsZero() {
		out.LastReceivedAt = &in.LastReceived
	}
	return out
}
