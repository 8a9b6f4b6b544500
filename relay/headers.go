package relay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
)

// The HTTP headers of a POST (see the package documentation for the
// table). Names are lower case, as HTTP/2 writes them; HTTP treats them
// case-insensitively.
const (
	HeaderSpecVersion = "ce-specversion"
	HeaderID          = "ce-id"
	HeaderSource      = "ce-source"
	HeaderType        = "ce-type"
	HeaderTime        = "ce-time"

	HeaderWorker          = "redrive-worker"
	HeaderAttempt         = "redrive-attempt"
	HeaderFirstFailureAt  = "redrive-first-failure-at"
	HeaderLastFailureAt   = "redrive-last-failure-at"
	HeaderLastError       = "redrive-last-error"
	HeaderLastErrorClass  = "redrive-last-error-class"
	HeaderReplayedFrom    = "redrive-replayed-from"
	HeaderRedelivered     = "redrive-redelivered"
	HeaderKey             = "redrive-key"
	HeaderMessagePrefix   = "redrive-header-"
	HeaderMessageHexNames = "redrive-header-hex-"
)

// SpecVersion is the CloudEvents version of every POST; EventType its
// ce-type.
const (
	SpecVersion = "1.0"
	EventType   = "redrive.message"
)

// Source is the ce-source of the messages of topic: "/redrive/<topic>".
func Source(topic string) string { return "/redrive/" + topic }

// traceContext reads and writes the W3C traceparent and tracestate.
var traceContext = propagation.TraceContext{}

// noContext is the context the propagator reads from and writes into.
var noContext = context.Background()

// errHeadersTooLarge is wrapped by the failure of a message whose headers
// exceed MaxHeaderBytes.
var errHeadersTooLarge = errors.New("headers too large")

// headers writes the HTTP headers of d into h, as the endpoint of worker
// receives them (source is its ce-source), with the attempt's trace
// context from ctx (or the message's own traceparent); it fails (without
// writing everything) when they take more than limit bytes.
func headers(h http.Header, d *broker.Delivery, worker, source string, limit int, ctx traceCarrier) error {
	w := headerWriter{h: h, limit: limit, vals: make([]string, 0, 16)}
	w.set(HeaderSpecVersion, SpecVersion)
	w.set(HeaderID, Encode(eventID(d)))
	w.set(HeaderSource, source)
	w.set(HeaderType, EventType)
	if !d.Timestamp.IsZero() {
		w.set(HeaderTime, d.Timestamp.UTC().Format(time.RFC3339Nano))
	}
	w.set(HeaderWorker, worker)
	w.set(HeaderAttempt, attemptText(d.Attempt))
	if !d.FirstFailureAt.IsZero() {
		w.set(HeaderFirstFailureAt, wire.FormatTime(d.FirstFailureAt))
	}
	if !d.LastFailureAt.IsZero() {
		w.set(HeaderLastFailureAt, wire.FormatTime(d.LastFailureAt))
	}
	if d.LastError != "" {
		w.set(HeaderLastError, Encode(d.LastError))
	}
	if d.Redelivered {
		w.set(HeaderRedelivered, "true")
	}
	if d.Key != nil {
		w.set(HeaderKey, Encode(string(d.Key)))
	}
	for k, v := range d.AllHeaders() {
		switch {
		case k == broker.HeaderErrorClass:
			w.set(HeaderLastErrorClass, Encode(v))
		case k == broker.HeaderReplayedFrom:
			w.set(HeaderReplayedFrom, Encode(v))
		case wire.Own(k):
		default:
			w.set(HeaderName(k), Encode(v))
		}
		if w.err != nil {
			return w.err
		}
	}
	ctx.inject(h, d)
	return w.err
}

// attempts are the texts of the usual attempt numbers, made once.
var attempts = func() (out [16]string) {
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func attemptText(n int) string {
	n = max(n, 1)
	if n < len(attempts) {
		return attempts[n]
	}
	return strconv.Itoa(n)
}

// headerWriter sets headers while they fit in limit bytes (as HTTP/1.1
// writes them: name, ": ", value, CRLF). The values' one-element slices
// share vals' array: one allocation for the usual headers, not one each.
type headerWriter struct {
	h     http.Header
	vals  []string
	limit int
	used  int
	err   error
}

func (w *headerWriter) set(name, value string) {
	if w.err != nil {
		return
	}
	w.used += len(name) + len(value) + 4
	if w.used > w.limit {
		w.err = fmt.Errorf("%w: the message's headers, key and story need more than %d bytes of HTTP headers (endpoint.max_header_bytes)", errHeadersTooLarge, w.limit)
		return
	}
	w.vals = append(w.vals, value)
	w.h[name] = w.vals[len(w.vals)-1 : len(w.vals) : len(w.vals)]
}

// eventID is d's ce-id: its message id; a record without one gets
// "<topic>-<partition>-<offset>" (the same on every delivery of the
// record), any other message a new id.
func eventID(d *broker.Delivery) string {
	switch {
	case d.ID != "":
		return d.ID
	case d.Partition >= 0 && d.Source != "":
		return d.Source + "-" + strconv.FormatInt(int64(d.Partition), 10) + "-" + strconv.FormatInt(d.Offset, 10)
	}
	return broker.NewMessageID()
}

// traceCarrier gives a POST its W3C trace context: the span of the
// handler attempt when tracing is on, else the message's own traceparent
// and tracestate when they are valid. Anything else of the message's
// trace headers travels only as a redrive-header-*.
type traceCarrier struct{ span trace.SpanContext }

func (c traceCarrier) inject(h http.Header, d *broker.Delivery) {
	sc := c.span
	if !sc.IsValid() {
		if d.Header("traceparent") == "" {
			return // the usual case, without the propagator's allocations
		}
		sc = trace.SpanContextFromContext(traceContext.Extract(noContext, deliveryCarrier{d}))
	}
	if sc.IsValid() {
		traceContext.Inject(trace.ContextWithSpanContext(noContext, sc), httpCarrier(h))
	}
}

// deliveryCarrier reads a delivery's headers for the propagator.
type deliveryCarrier struct{ d *broker.Delivery }

func (c deliveryCarrier) Get(key string) string { return c.d.Header(key) }
func (c deliveryCarrier) Set(string, string)    {}
func (c deliveryCarrier) Keys() []string        { return nil }

// httpCarrier writes lower-case header names.
type httpCarrier http.Header

func (c httpCarrier) Get(key string) string { return first(http.Header(c)[key]) }
func (c httpCarrier) Set(key, value string) { http.Header(c)[strings.ToLower(key)] = []string{value} }
func (c httpCarrier) Keys() []string        { return nil }

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// HeaderName is the HTTP header that carries a message header named
// name: "redrive-header-" + name when name is made of lower-case letters,
// digits and "-" only (and does not begin with "hex-"), else
// "redrive-header-hex-" + the hexadecimal of its bytes. HTTP names are
// case-insensitive and proxies drop names with "_" or ".": the hex form
// keeps any name, byte for byte.
func HeaderName(name string) string {
	if plainName(name) {
		return HeaderMessagePrefix + name
	}
	return HeaderMessageHexNames + hex.EncodeToString([]byte(name))
}

func plainName(name string) bool {
	if name == "" || strings.HasPrefix(name, "hex-") {
		return false
	}
	for i := range len(name) {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// MessageHeaderName is the inverse of HeaderName: the message header an
// HTTP header name (any case) carries, and whether it carries one.
func MessageHeaderName(httpName string) (string, bool) {
	n := strings.ToLower(httpName)
	if rest, ok := strings.CutPrefix(n, HeaderMessageHexNames); ok {
		b, err := hex.DecodeString(rest)
		return string(b), err == nil
	}
	if rest, ok := strings.CutPrefix(n, HeaderMessagePrefix); ok && plainName(rest) {
		return rest, true
	}
	return "", false
}

// Encode percent-encodes s for an HTTP header value as the CloudEvents
// HTTP binding does: every byte outside the printable ASCII range
// U+0021–U+007E, and space, '"' and '%', becomes %XY. Any bytes survive,
// not only UTF-8 (a binary header, a binary key).
func Encode(s string) string {
	n := 0
	for i := range len(s) {
		if mustEncode(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const digits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := range len(s) {
		c := s[i]
		if mustEncode(c) {
			b = append(b, '%', digits[c>>4], digits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func mustEncode(c byte) bool { return c < 0x21 || c > 0x7e || c == '"' || c == '%' }

// Decode reverses Encode (any %XY, either case); it fails on a "%" not
// followed by two hexadecimal digits.
func Decode(v string) (string, error) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	b := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b = append(b, v[i])
			continue
		}
		if i+2 >= len(v) {
			return "", fmt.Errorf("relay: %q: %% at the end", v)
		}
		x, err := hex.DecodeString(v[i+1 : i+3])
		if err != nil {
			return "", fmt.Errorf("relay: %q: %%%s is not a hexadecimal byte", v, v[i+1:i+3])
		}
		b = append(b, x[0])
		i += 2
	}
	return string(b), nil
}
