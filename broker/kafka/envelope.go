package kafka

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/broker/driver"
)

// Encodings of the envelope's original_value, original_key and header
// values.
const (
	// EncodingJSON: the value is valid, compact JSON embedded as is.
	EncodingJSON = "json"
	// EncodingUTF8: the bytes are valid UTF-8, carried as a JSON string.
	EncodingUTF8 = "utf8"
	// EncodingBase64: any bytes, carried as standard, padded base64.
	EncodingBase64 = "base64"
)

// MaxStackTrace is how many characters (runes) of Entry.StackTrace the
// envelope keeps.
const MaxStackTrace = 500

// ErrNotEnvelope is wrapped by DecodeEnvelope errors when the input is not a
// redrive dead-letter envelope at all: not JSON, not a JSON object, or an
// object without "original_topic". Other decoding errors mean a damaged
// envelope.
var ErrNotEnvelope = errors.New("not a redrive dead-letter envelope")

// maxEmbedDepth bounds the nesting of a JSON value embedded as is, well
// below the decoder's own limit, so that an embedded value never makes the
// envelope undecodable.
const maxEmbedDepth = 1000

// EncodeEnvelope renders e as the JSON dead-letter envelope written as the
// value of Kafka "<topic>.dlq" records:
//
//	{
//	  "message_id": "…",                       // omitted when empty
//	  "original_topic": "escrow.commands",
//	  "original_partition": 3,                  // -1 when not a Kafka record
//	  "original_offset": 12345,                 // -1 when not a Kafka record
//	  "original_key": "deal_550e8400",          // null for a nil key
//	  "original_key_encoding": "base64",        // only when the key is not UTF-8
//	  "original_value": {"amount": 10},         // null for a nil value
//	  "original_value_encoding": "json",        // json | utf8 | base64; omitted for a nil value
//	  "original_headers": {"k": "v"},           // omitted for nil headers
//	  "original_headers_encoding": {"k": "base64"}, // values that are not UTF-8
//	  "original_binary_headers": {"<base64 name>": "<base64 value>"}, // names that are not UTF-8
//	  "original_wire": "<base64>",              // the exact headers (wire.Encode); omitted when unknown
//	  "error_details": {"exception_class": "…", "message": "…", "stack_trace": "…"},
//	  "reason": "max_retries",
//	  "retry_count": 5,
//	  "worker": "payout-executor",              // omitted when empty
//	  "worker_instance": "payout-executor-1",
//	  "source": "escrow.commands",              // omitted when empty
//	  "group_type": "share",                    // share groups only (retry mode share)
//	  "delivery_count": 2,                      // share groups only: the broker's delivery count
//	  "first_failure_at": "2025-01-15T10:30:00Z", // RFC 3339 UTC; omitted when zero
//	  "last_failure_at": "2025-01-15T11:45:00Z"
//	}
//
// message_id, original_key_encoding, original_headers_encoding,
// original_binary_headers, original_wire, worker, source, group_type and
// delivery_count extend the envelope of the design; readers that do not
// know them may ignore them.
// original_headers is a map, a repeated header name keeping its last value;
// original_wire (Entry.OriginalWire, base64) keeps the headers exactly: in
// order, repeated names and null values included.
//
// The original key, value and headers survive byte for byte. The value is
// embedded as JSON (encoding "json") only when it is valid UTF-8, compact
// JSON, which the envelope carries verbatim; other UTF-8 values (text,
// pretty-printed JSON, the empty value) are JSON strings ("utf8"), and
// everything else is base64. A key is a JSON string when it is UTF-8, else
// base64 with "original_key_encoding"; likewise header values, marked in
// "original_headers_encoding". The stack trace is cut to MaxStackTrace
// characters; invalid UTF-8 in the descriptive texts (topic, message id,
// error details, reason, worker, source) is replaced by U+FFFD.
//
// An embedded JSON value is carried exactly, numbers included: a payload
// number beyond float64 range (1E400) is valid JSON, but readers that decode
// the envelope into float64 need json.Decoder.UseNumber or equivalent.
//
// Tools that re-indent the envelope change the bytes of an embedded JSON
// value; an envelope must be stored as it was written.
//
// EncodeEnvelope fails only for failure times outside years 0 to 9999.
func EncodeEnvelope(e driver.Entry) ([]byte, error) {
	w := envelopeWriter{b: make([]byte, 0, 512+len(e.OriginalKey)*4/3+len(e.OriginalValue)*4/3)}
	w.b = append(w.b, '{')
	if e.MessageID != "" {
		w.stringField("message_id", validUTF8(e.MessageID))
	}
	w.stringField("original_topic", validUTF8(e.OriginalTopic))
	w.field("original_partition")
	w.b = strconv.AppendInt(w.b, int64(e.OriginalPartition), 10)
	w.field("original_offset")
	w.b = strconv.AppendInt(w.b, e.OriginalOffset, 10)

	w.field("original_key")
	switch {
	case e.OriginalKey == nil:
		w.b = append(w.b, "null"...)
	case utf8.Valid(e.OriginalKey):
		w.b = appendString(w.b, e.OriginalKey)
	default:
		w.b = appendBase64(w.b, e.OriginalKey)
		w.stringField("original_key_encoding", EncodingBase64)
	}

	w.field("original_value")
	if e.OriginalValue == nil {
		w.b = append(w.b, "null"...)
	} else {
		enc := valueEncoding(e.OriginalValue)
		switch enc {
		case EncodingJSON:
			w.b = append(w.b, e.OriginalValue...)
		case EncodingUTF8:
			w.b = appendString(w.b, e.OriginalValue)
		default:
			w.b = appendBase64(w.b, e.OriginalValue)
		}
		w.stringField("original_value_encoding", enc)
	}

	if e.OriginalHeaders != nil {
		w.headers(e.OriginalHeaders)
	}
	if e.OriginalWire != nil {
		w.field("original_wire")
		w.b = appendBase64(w.b, e.OriginalWire)
	}

	w.field("error_details")
	inner := envelopeWriter{b: append(w.b, '{')}
	inner.stringField("exception_class", validUTF8(e.ErrorClass))
	inner.stringField("message", validUTF8(e.ErrorMessage))
	inner.stringField("stack_trace", truncateRunes(validUTF8(e.StackTrace), MaxStackTrace))
	w.b = append(inner.b, '}')

	w.stringField("reason", validUTF8(e.Reason))
	w.field("retry_count")
	w.b = strconv.AppendInt(w.b, int64(e.RetryCount), 10)
	if e.Worker != "" {
		w.stringField("worker", validUTF8(e.Worker))
	}
	w.stringField("worker_instance", validUTF8(e.WorkerInstance))
	if e.Source != "" {
		w.stringField("source", validUTF8(e.Source))
	}
	if e.GroupType != "" {
		w.stringField("group_type", validUTF8(e.GroupType))
	}
	if e.DeliveryCount > 0 {
		w.field("delivery_count")
		w.b = strconv.AppendInt(w.b, int64(e.DeliveryCount), 10)
	}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"first_failure_at", e.FirstFailureAt}, {"last_failure_at", e.LastFailureAt}} {
		if t.t.IsZero() {
			continue
		}
		u := t.t.UTC()
		if y := u.Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("dlq: encode envelope: %s: year %d is outside [0, 9999]", t.name, y)
		}
		w.field(t.name)
		w.b = append(w.b, '"')
		w.b = u.AppendFormat(w.b, time.RFC3339Nano)
		w.b = append(w.b, '"')
	}
	return append(w.b, '}'), nil
}

// envelopeWriter appends the members of a JSON object.
type envelopeWriter struct {
	b      []byte
	fields int
}

// sep appends the comma before every member but the first.
func (w *envelopeWriter) sep() {
	if w.fields > 0 {
		w.b = append(w.b, ',')
	}
	w.fields++
}

func (w *envelopeWriter) field(name string) {
	w.sep()
	w.b = appendString(w.b, name)
	w.b = append(w.b, ':')
}

func (w *envelopeWriter) stringField(name, value string) {
	w.field(name)
	w.b = appendString(w.b, value)
}

// headers writes original_headers and, when needed,
// original_headers_encoding and original_binary_headers, names sorted.
func (w *envelopeWriter) headers(h map[string]string) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)

	var base64Values, binaryNames []string
	w.field("original_headers")
	obj := envelopeWriter{b: append(w.b, '{')}
	for _, k := range names {
		v := h[k]
		switch {
		case !utf8.ValidString(k):
			binaryNames = append(binaryNames, k)
		case utf8.ValidString(v):
			obj.stringField(k, v)
		default:
			obj.field(k)
			obj.b = appendBase64(obj.b, v)
			base64Values = append(base64Values, k)
		}
	}
	w.b = append(obj.b, '}')

	if len(base64Values) > 0 {
		w.field("original_headers_encoding")
		obj := envelopeWriter{b: append(w.b, '{')}
		for _, k := range base64Values {
			obj.stringField(k, EncodingBase64)
		}
		w.b = append(obj.b, '}')
	}
	if len(binaryNames) > 0 {
		w.field("original_binary_headers")
		obj := envelopeWriter{b: append(w.b, '{')}
		for _, k := range binaryNames {
			obj.sep()
			obj.b = append(appendBase64(obj.b, k), ':')
			obj.b = appendBase64(obj.b, h[k])
		}
		w.b = append(obj.b, '}')
	}
}

// valueEncoding picks the encoding of a non-nil value.
func valueEncoding(v []byte) string {
	if !utf8.Valid(v) {
		return EncodingBase64
	}
	if embeddable(v) {
		return EncodingJSON
	}
	return EncodingUTF8
}

// embeddable reports whether v, valid UTF-8, is JSON that the envelope can
// carry verbatim: valid, without whitespace outside strings (what
// json.Compact gives back unchanged) and not nested too deeply.
func embeddable(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] { // cheap rejection of most non-JSON payloads
	case '{', '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
	default:
		return false
	}
	depth, inString, escaped := 0, false, false
	for _, c := range v {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxEmbedDepth {
				return false
			}
		case '}', ']':
			depth--
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return json.Valid(v)
}

const hexDigits = "0123456789abcdef"

// appendString appends s, valid UTF-8, as a JSON string. It escapes only
// what JSON requires plus U+2028 and U+2029, so the text stays readable
// ("<", "&", "é" and "/" are kept as they are).
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var esc string
		switch {
		case c == '"':
			esc = `\"`
		case c == '\\':
			esc = `\\`
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c < 0x20:
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
			continue
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xA8:
			// U+2028 and U+2029 are valid JSON but break JavaScript.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			i += 2
			start = i + 1
			continue
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendBase64 appends s as a JSON string of standard, padded base64.
func appendBase64[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, []byte(s))
	return append(b, '"')
}

func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
