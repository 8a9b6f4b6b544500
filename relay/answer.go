package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redrive/redrive/broker"
)

// Outcome names the class of a POST's result, as the metrics and the
// heartbeat count it.
type Outcome string

// Outcomes.
const (
	// OutcomeSuccess: a 2xx answer; the message is done.
	OutcomeSuccess Outcome = "success"
	// OutcomePermanent: a permanent status or a DROP body; dead-lettered
	// at once (also a message whose headers do not fit).
	OutcomePermanent Outcome = "permanent"
	// OutcomeRetryAfter: 429 or 503 with a Retry-After the retry follows.
	OutcomeRetryAfter Outcome = "retry_after"
	// OutcomeRetry: any other answer; retried by the worker's schedule.
	OutcomeRetry Outcome = "retry"
	// OutcomeTimeout: no whole answer within the timeout; retried.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeUnreachable: no answer (connection refused or reset, DNS,
	// TLS); retried.
	OutcomeUnreachable Outcome = "unreachable"
	// OutcomeCanceled: the relay stopped during the POST; the message is
	// handed back without spending an attempt.
	OutcomeCanceled Outcome = "canceled"
)

// outcomes lists every Outcome, in the order of Stats.
var outcomes = [...]Outcome{OutcomeSuccess, OutcomePermanent, OutcomeRetryAfter, OutcomeRetry, OutcomeTimeout, OutcomeUnreachable, OutcomeCanceled}

func (o Outcome) index() int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return len(outcomes) - 1
}

// Limits of what the relay reads of an answer.
const (
	// MaxResponseBytes is the most of a response body the relay reads:
	// enough for a JSON status; the rest is not read (the connection is
	// then closed instead of reused).
	MaxResponseBytes = 64 << 10
	// MaxErrorBody is the most of a response body that becomes the
	// failure's text (the dead letter's error), escaped.
	MaxErrorBody = 512
)

// StatusError is the failure of a POST the endpoint answered with a
// status other than 2xx, or with a body asking for a retry or a drop.
type StatusError struct {
	// StatusCode is the answer's HTTP status.
	StatusCode int
	// Body is the start of the response body (MaxErrorBody bytes at
	// most), escaped: printable, one line.
	Body string
	// Hint says why a status that could succeed did not (a redirect not
	// followed, a body status).
	Hint string
}

// Error says "HTTP 503 Service Unavailable: <body>".
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("HTTP ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" ")
		b.WriteString(t)
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	if e.Body != "" {
		b.WriteString(": ")
		b.WriteString(e.Body)
	}
	return b.String()
}

// ErrorClass is "http.<status>", e.g. "http.503": the class the retry
// metrics, the dead letter and retry.non_retriable see.
func (e *StatusError) ErrorClass() string { return "http." + strconv.Itoa(e.StatusCode) }

// TransportError is the failure of a POST that got no (whole) answer.
type TransportError struct {
	// Timeout is set when the answer did not come within the timeout.
	Timeout bool
	// Err is the client's error (its text never holds the URL's query).
	Err error
}

// Error says what happened.
func (e *TransportError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *TransportError) Unwrap() error { return e.Err }

// ErrorClass is "http.timeout" or "http.unreachable".
func (e *TransportError) ErrorClass() string {
	if e.Timeout {
		return "http.timeout"
	}
	return "http.unreachable"
}

// HeadersError is the failure of a message whose headers do not fit in
// the endpoint's MaxHeaderBytes: it is dead-lettered (Permanent), whole.
type HeadersError struct{ Err error }

// Error says which limit.
func (e *HeadersError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *HeadersError) Unwrap() error { return e.Err }

// ErrorClass is "http.headers_too_large".
func (e *HeadersError) ErrorClass() string { return "http.headers_too_large" }

// judge maps an answer onto the handler contract (see the package
// documentation): nil, Permanent, RetryAfter or a plain error.
func (e *Endpoint) judge(resp *http.Response, body []byte, now time.Time) (Outcome, error) {
	code := resp.StatusCode
	verdict := bodyStatus(resp.Header, body)
	fail := func(hint string) *StatusError {
		return &StatusError{StatusCode: code, Body: Escape(body, MaxErrorBody), Hint: hint}
	}
	switch {
	case code >= 200 && code < 300 && verdict == "RETRY":
		return OutcomeRetry, fail(`the body says "RETRY"`)
	case verdict == "DROP":
		return OutcomePermanent, broker.Permanent(fail(`the body says "DROP"`))
	case code >= 200 && code < 300:
		return OutcomeSuccess, nil
	case e.permanent[code]:
		return OutcomePermanent, broker.Permanent(fail(""))
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			return OutcomeRetryAfter, broker.RetryAfter(fail(""), min(d, e.maxRetryAfter))
		}
	case code >= 300 && code < 400:
		return OutcomeRetry, fail("redirect not followed: see endpoint.max_redirects; only 307 and 308 are followed")
	}
	return OutcomeRetry, fail("")
}

// bodyStatus returns the status a JSON body states ({"status": "DROP"},
// "RETRY" or "SUCCESS", Dapr's words, any case), upper-cased; "" when the
// body is not a JSON object with a string status.
func bodyStatus(h http.Header, body []byte) string {
	if len(body) == 0 || len(body) > MaxResponseBytes {
		return ""
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return ""
	}
	var v struct {
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Status, &s) != nil {
		return ""
	}
	switch s = strings.ToUpper(s); s {
	case "DROP", "RETRY", "SUCCESS":
		return s
	}
	return ""
}

// retryAfter reads a Retry-After value: delta-seconds or an HTTP date
// (a date in the past is 0).
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Escape returns the first n bytes of b as one printable line: printable
// characters as they are, a backslash doubled, every other rune or
// invalid byte as \n, \t, \xNN or \u{NNNN} (so that a body cannot move a
// terminal's cursor, colour it or reorder a line with a bidirectional
// control). A cut body ends with "…".
func Escape(b []byte, n int) string {
	cut := len(b) > n
	if cut {
		b = b[:n]
	}
	b = bytes.TrimSpace(b)
	var s strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size <= 1:
			if cut && !utf8.FullRune(b) {
				b = nil // a rune the cut split
				continue
			}
			fmt.Fprintf(&s, `\x%02x`, b[0])
		case r == '\\':
			s.WriteString(`\\`)
		case r == '\n':
			s.WriteString(`\n`)
		case r == '\r':
			s.WriteString(`\r`)
		case r == '\t':
			s.WriteString(`\t`)
		case r == ' ' || (unicode.IsPrint(r) && !unicode.Is(unicode.Bidi_Control, r)):
			s.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&s, `\x%02x`, r)
		default:
			fmt.Fprintf(&s, `\u{%04x}`, r)
		}
		b = b[size:]
	}
	if cut {
		s.WriteString("…")
	}
	return s.String()
}
