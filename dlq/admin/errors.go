package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// Error codes: the "code" of every error body. configs/openapi.yaml lists
// them with their statuses; a client branches on the code, not on the
// message.
const (
	// CodeInvalidRequest (400): a bad parameter, header or body; "param"
	// names it.
	CodeInvalidRequest = "invalid_request"
	// CodeUnauthorized (401): the bearer token is missing or wrong.
	CodeUnauthorized = "unauthorized"
	// CodeCrossOrigin (403): the request's Origin (or Referer) is another
	// site.
	CodeCrossOrigin = "cross_origin"
	// CodeIdentityRefused (403): the request carries the authenticating
	// proxy's identity header, but from an address that is not the
	// proxy's, with a value that is not one name, or for a person in no
	// group that grants a role (admin.proxy_auth).
	CodeIdentityRefused = "identity_refused"
	// CodeReadOnly (403): a viewer's credential on a route that changes
	// something.
	CodeReadOnly = "read_only"
	// CodeNotFound (404): no such route, DLQ, entry or job.
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed (405): the path exists for other methods (the
	// Allow header lists them).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNotPending (409): the entry is not pending (replayed, discarded,
	// being replayed or archived).
	CodeNotPending = "not_pending"
	// CodeOriginMismatch (409): the entry's recorded origin disagrees with
	// the configured worker of its DLQ; the message names where the entry
	// claims to come from and where its DLQ replays to.
	CodeOriginMismatch = "origin_mismatch"
	// CodeNoRoute (409): no configured worker has the entry's DLQ: a
	// replay has nowhere to go.
	CodeNoRoute = "no_route"
	// CodeUnknownMessage (409): the entry's original message is unknown
	// (it was stored raw, reason unparseable): a replay would send the
	// dead-letter record as if it were the message. Replay it with
	// "as_stored": true to send its stored bytes as they are (audited as
	// replay_as_stored).
	CodeUnknownMessage = "unknown_message"
	// CodeJobRunning (409): the DLQ already has a running replay-all job
	// (the body carries it).
	CodeJobRunning = "job_running"
	// CodeJobNotRunning (409): the job to cancel has already ended (the
	// body carries it).
	CodeJobNotRunning = "job_not_running"
	// CodeNotPaused (409): the worker to resume is not paused.
	CodeNotPaused = "not_paused"
	// CodeTooLarge (413): the request body is over the limit.
	CodeTooLarge = "body_too_large"
	// CodeUnsupportedMediaType (415): a write without Content-Type:
	// application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeHostNotAllowed (421): the Host header is not an address of this
	// server nor one of admin.allowed_hosts.
	CodeHostNotAllowed = "host_not_allowed"
	// CodeInternal (500): an unexpected failure, logged.
	CodeInternal = "internal"
	// CodeReplayFailed (502): the broker refused or did not confirm the
	// replay; the entry is pending again.
	CodeReplayFailed = "replay_failed"
	// CodeUnavailable (503): no broker to replay to, the server is shutting
	// down, or the request was cancelled.
	CodeUnavailable = "unavailable"
)

// errorJSON is every error response. Error is a message for people; Code
// is stable (see the Code constants).
type errorJSON struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Param names the bad parameter of a 400.
	Param string `json:"param,omitempty"`
	// Job is the job of a job_running or job_not_running 409.
	Job *dlq.Job `json:"job,omitempty"`
}

// writeError writes an error response.
func writeError(w http.ResponseWriter, status int, code, param, msg string) {
	writeJSON(w, status, errorJSON{Error: msg, Code: code, Param: param})
}

// bad is a 400 naming its parameter.
func bad(param, format string, args ...any) error { return dlq.BadField(param, format, args...) }

// reject writes the response of a dlq.FieldError, a too-large body, or any other
// error via fail.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, err error) {
	var bp *dlq.FieldError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &bp):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, bp.Field, bp.Error())
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "", fmt.Sprintf("request body over %d bytes", tooBig.Limit))
	default:
		s.fail(w, r, err)
	}
}

// Fixed messages of the errors fail maps: what the client reads. The
// error itself (with the store's or the broker's words) goes to the log.
const (
	msgNotFound      = "no such entry"
	msgNotPending    = "the entry is not pending (it was replayed, discarded or archived, or is being replayed); reload it"
	msgReason        = "reason: required: say why the entry is discarded"
	msgInvalidQuery  = "the query is not valid (see the log for details)"
	msgReplayFailed  = "the broker did not confirm the replay; the entry is pending again"
	msgNoRepublisher = "this server cannot replay: no broker configured"
	msgCancelled     = "request cancelled"
	msgInternal      = "internal error"
)

// fail maps an Ops error to its response: ErrNotFound 404, ErrNotPending
// 409, ErrOriginMismatch, ErrNoRoute and ErrUnknownMessage 409, bad input 400, a broker
// refusal 502, no republisher 503, anything else 500. The body holds a
// fixed message and the code (an origin mismatch's message names the
// entry's claim and the configured target, quoted and clipped, as the
// operator must see them, as does an unknown message's, which names the
// decoding error); the error goes to the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, param, msg := http.StatusInternalServerError, CodeInternal, "", msgInternal
	switch {
	case errors.Is(err, dlq.ErrNotFound):
		status, code, msg = http.StatusNotFound, CodeNotFound, msgNotFound
	case errors.Is(err, dlq.ErrNotPending):
		status, code, msg = http.StatusConflict, CodeNotPending, msgNotPending
	case errors.Is(err, dlq.ErrOriginMismatch):
		status, code, msg = http.StatusConflict, CodeOriginMismatch, err.Error()
	case errors.Is(err, operate.ErrNoRoute):
		status, code, msg = http.StatusConflict, CodeNoRoute, err.Error()
	case errors.Is(err, operate.ErrUnknownMessage):
		status, code, msg = http.StatusConflict, CodeUnknownMessage, err.Error()
	case errors.Is(err, operate.ErrReasonRequired):
		status, code, param, msg = http.StatusBadRequest, CodeInvalidRequest, "reason", msgReason
	case errors.Is(err, dlq.ErrInvalidQuery):
		status, code, msg = http.StatusBadRequest, CodeInvalidRequest, msgInvalidQuery
	case errors.Is(err, operate.ErrReplayFailed):
		status, code, msg = http.StatusBadGateway, CodeReplayFailed, msgReplayFailed
	case errors.Is(err, operate.ErrNoRepublisher):
		status, code, msg = http.StatusServiceUnavailable, CodeUnavailable, msgNoRepublisher
	case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
		status, code, msg = http.StatusServiceUnavailable, CodeUnavailable, msgCancelled
	}
	level := s.log.Warn
	if status == http.StatusInternalServerError {
		level = s.log.Error
	}
	level("admin: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "code", code, "error", err)
	writeError(w, status, code, param, msg)
}

// bodyError turns a JSON decoding error into a 400 naming the field, in
// JSON's words: never a Go type name or the decoder's message.
func bodyError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return bad(typeErr.Field, "must be %s", jsonKind(typeErr.Type))
	case errors.As(err, &typeErr):
		return bad("body", "must be a JSON object")
	case errors.As(err, &syntaxErr):
		return bad("body", "not valid JSON (at byte %d)", syntaxErr.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return bad(clipParam(f), "unknown field")
	}
	return bad("body", "not a JSON object")
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// clipParam bounds a parameter name taken from the request.
func clipParam(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}
