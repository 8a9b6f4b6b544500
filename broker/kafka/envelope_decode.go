package kafka

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// rawEnvelope is the envelope as DecodeEnvelope reads it; pointers tell an
// absent member from a zero one.
type rawEnvelope struct {
	MessageID               string                     `json:"message_id"`
	OriginalTopic           *string                    `json:"original_topic"`
	OriginalPartition       *int32                     `json:"original_partition"`
	OriginalOffset          *int64                     `json:"original_offset"`
	OriginalKey             json.RawMessage            `json:"original_key"`
	OriginalKeyEncoding     string                     `json:"original_key_encoding"`
	OriginalValue           json.RawMessage            `json:"original_value"`
	OriginalValueEncoding   string                     `json:"original_value_encoding"`
	OriginalHeaders         map[string]json.RawMessage `json:"original_headers"`
	OriginalHeadersEncoding map[string]string          `json:"original_headers_encoding"`
	OriginalBinaryHeaders   map[string]string          `json:"original_binary_headers"`
	OriginalWire            *string                    `json:"original_wire"`
	ErrorDetails            struct {
		ExceptionClass string `json:"exception_class"`
		Message        string `json:"message"`
		StackTrace     string `json:"stack_trace"`
	} `json:"error_details"`
	Reason         string          `json:"reason"`
	RetryCount     int             `json:"retry_count"`
	Worker         string          `json:"worker"`
	WorkerInstance string          `json:"worker_instance"`
	Source         string          `json:"source"`
	FirstFailureAt json.RawMessage `json:"first_failure_at"`
	LastFailureAt  json.RawMessage `json:"last_failure_at"`
	// GroupType and DeliveryCount are read leniently (raw): they describe,
	// never decide, and a writer that typed them otherwise must not make
	// its envelope unreadable.
	GroupType     json.RawMessage `json:"group_type"`
	DeliveryCount json.RawMessage `json:"delivery_count"`
}

// DecodeEnvelope parses an envelope written by EncodeEnvelope, by hand or
// by another language's dead-letter publisher following the design's
// reference envelope, back into an Entry, with the original key, value and
// headers byte for byte. Absent original_partition and original_offset
// read as -1. Unknown members are ignored; unknown encodings are errors.
// When data is not an envelope at all the error wraps ErrNotEnvelope.
//
// The members redrive adds to the reference envelope are optional, and
// what their absence means is inferred as follows (docs/kafka.md, "The
// envelope"):
//
//   - original_value without original_value_encoding: a JSON string is
//     UTF-8 text (the string's characters, unescaped); an object, array,
//     number, true or false is JSON, its bytes as they stand in the
//     envelope; null or an absent member is a null value (no value).
//   - original_key without original_key_encoding: a string is its text, a
//     number, boolean, object or array its JSON text, null no key.
//   - original_headers values: a string is its text, null the empty value,
//     anything else its JSON text.
//   - reason absent: the entry's reason is empty, never invented.
//   - first_failure_at and last_failure_at: RFC 3339 with any fractional
//     precision (Jackson writes nanoseconds), or epoch milliseconds as a
//     JSON number or a string of digits.
//
// No member names a route: the entry's origin is only ever checked against
// the configured worker of its DLQ (operate.Ops.Target).
func DecodeEnvelope(data []byte) (driver.Entry, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %w: not a JSON object", ErrNotEnvelope)
	}
	var raw rawEnvelope
	err := json.Unmarshal(data, &raw)
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %w: %w", ErrNotEnvelope, err)
	case raw.OriginalTopic == nil:
		if err != nil {
			return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %w: %w", ErrNotEnvelope, err)
		}
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %w: no original_topic", ErrNotEnvelope)
	case err != nil:
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %s: %w", typeErr.Field, err)
		}
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %w", err)
	}

	e := driver.Entry{
		MessageID:         raw.MessageID,
		OriginalTopic:     *raw.OriginalTopic,
		OriginalPartition: -1,
		OriginalOffset:    -1,
		ErrorClass:        raw.ErrorDetails.ExceptionClass,
		ErrorMessage:      raw.ErrorDetails.Message,
		StackTrace:        raw.ErrorDetails.StackTrace,
		Reason:            raw.Reason,
		RetryCount:        raw.RetryCount,
		Worker:            raw.Worker,
		WorkerInstance:    raw.WorkerInstance,
		Source:            raw.Source,
	}
	if raw.OriginalPartition != nil {
		e.OriginalPartition = *raw.OriginalPartition
	}
	if raw.OriginalOffset != nil {
		e.OriginalOffset = *raw.OriginalOffset
	}
	if e.RetryCount < 0 {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: retry_count: %d is negative", e.RetryCount)
	}
	if e.OriginalKey, err = decodeKey(raw.OriginalKey, raw.OriginalKeyEncoding); err != nil {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: original_key: %w", err)
	}
	if e.OriginalValue, err = decodeValue(raw.OriginalValue, raw.OriginalValueEncoding); err != nil {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: original_value: %w", err)
	}
	if e.OriginalHeaders, err = decodeHeaders(&raw); err != nil {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: %w", err)
	}
	if raw.OriginalWire != nil {
		if e.OriginalWire, err = decodeBase64(*raw.OriginalWire); err != nil {
			return driver.Entry{}, fmt.Errorf("dlq: decode envelope: original_wire: %w", err)
		}
		if _, err := wire.Decode(e.OriginalWire); err != nil {
			return driver.Entry{}, fmt.Errorf("dlq: decode envelope: original_wire: %w", err)
		}
	}
	e.GroupType, e.DeliveryCount = shareMembers(raw.GroupType, raw.DeliveryCount)
	if e.FirstFailureAt, err = decodeTime(raw.FirstFailureAt); err != nil {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: first_failure_at: %w", err)
	}
	if e.LastFailureAt, err = decodeTime(raw.LastFailureAt); err != nil {
		return driver.Entry{}, fmt.Errorf("dlq: decode envelope: last_failure_at: %w", err)
	}
	return e, nil
}

// shareMembers reads group_type (a string, else none) and delivery_count
// (a positive integer that fits an int32, else 0) of an envelope.
func shareMembers(groupType, count json.RawMessage) (string, int) {
	var gt string
	if len(groupType) > 0 && groupType[0] == '"' {
		gt, _ = jsonString(groupType)
	}
	n, err := strconv.ParseInt(string(count), 10, 32)
	if err != nil || n < 0 {
		n = 0
	}
	return gt, int(n)
}

func decodeKey(key json.RawMessage, enc string) ([]byte, error) {
	switch enc {
	case "", EncodingUTF8, EncodingBase64:
	default:
		return nil, fmt.Errorf("unknown encoding %q", enc)
	}
	if isNull(key) {
		return nil, nil
	}
	if key[0] != '"' {
		if enc != "" {
			return nil, fmt.Errorf("encoding %s needs a JSON string", enc)
		}
		return slices.Clip(key), nil // a number, boolean, object or array: its JSON text
	}
	s, err := jsonString(key)
	if err != nil {
		return nil, err
	}
	if enc == EncodingBase64 {
		return decodeBase64(s)
	}
	return []byte(s), nil
}

func decodeValue(v json.RawMessage, enc string) ([]byte, error) {
	switch enc {
	case "":
		// The reference envelope: the value's JSON type says what it is.
		switch {
		case isNull(v):
			return nil, nil
		case v[0] == '"':
			s, err := jsonString(v)
			return []byte(s), err
		}
		return slices.Clip(v), nil
	case EncodingJSON:
		if len(v) == 0 {
			return nil, errors.New("missing")
		}
		return slices.Clip(v), nil
	case EncodingUTF8, EncodingBase64:
		if len(v) == 0 || v[0] != '"' {
			return nil, fmt.Errorf("encoding %s needs a JSON string", enc)
		}
		s, err := jsonString(v)
		if err != nil {
			return nil, err
		}
		if enc == EncodingBase64 {
			return decodeBase64(s)
		}
		return []byte(s), nil
	default:
		return nil, fmt.Errorf("unknown original_value_encoding %q", enc)
	}
}

// isNull reports an absent member or a JSON null.
func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

// jsonString unquotes v, a JSON string.
func jsonString(v json.RawMessage) (string, error) {
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

// headerText is a header value of original_headers as text: a string's
// characters, "" for null, else the value's JSON text.
func headerText(v json.RawMessage) (string, error) {
	switch {
	case isNull(v):
		return "", nil
	case v[0] == '"':
		return jsonString(v)
	}
	return string(v), nil
}

func decodeHeaders(raw *rawEnvelope) (map[string]string, error) {
	for k := range raw.OriginalHeadersEncoding {
		if _, ok := raw.OriginalHeaders[k]; !ok {
			return nil, fmt.Errorf("original_headers_encoding: header %q is not in original_headers", k)
		}
	}
	var h map[string]string
	if raw.OriginalHeaders != nil {
		h = make(map[string]string, len(raw.OriginalHeaders))
	}
	for k, rv := range raw.OriginalHeaders {
		v, err := headerText(rv)
		if err != nil {
			return nil, fmt.Errorf("original_headers: %q: %w", k, err)
		}
		switch enc := raw.OriginalHeadersEncoding[k]; enc {
		case "", EncodingUTF8:
		case EncodingBase64:
			b, err := decodeBase64(v)
			if err != nil {
				return nil, fmt.Errorf("original_headers: %q: %w", k, err)
			}
			v = string(b)
		default:
			return nil, fmt.Errorf("original_headers_encoding: %q: unknown encoding %q", k, enc)
		}
		h[k] = v
	}
	for bk, bv := range raw.OriginalBinaryHeaders {
		k, err := decodeBase64(bk)
		if err != nil {
			return nil, fmt.Errorf("original_binary_headers: name %q: %w", bk, err)
		}
		v, err := decodeBase64(bv)
		if err != nil {
			return nil, fmt.Errorf("original_binary_headers: %q: %w", bk, err)
		}
		if h == nil {
			h = make(map[string]string, len(raw.OriginalBinaryHeaders))
		}
		if _, dup := h[string(k)]; dup {
			return nil, fmt.Errorf("original_binary_headers: %q: header %q is already in original_headers", bk, k)
		}
		h[string(k)] = string(v)
	}
	return h, nil
}

func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("invalid base64: %w", err)
	}
	return b, nil
}

// decodeTime reads a failure time: RFC 3339 (any fractional precision, any
// offset), or epoch milliseconds as a JSON number or a string of digits.
// Absent, null or "" is the zero time.
func decodeTime(v json.RawMessage) (time.Time, error) {
	if isNull(v) {
		return time.Time{}, nil
	}
	s := string(v)
	if v[0] == '"' {
		var err error
		if s, err = jsonString(v); err != nil {
			return time.Time{}, err
		}
		if s == "" {
			return time.Time{}, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			if y := t.UTC().Year(); y < 0 || y > 9999 {
				return time.Time{}, fmt.Errorf("%q is outside years 0 to 9999", s)
			}
			return t.UTC(), nil
		}
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < minUnixMilli || ms > maxUnixMilli {
		return time.Time{}, fmt.Errorf("%.60q is neither an RFC 3339 time nor epoch milliseconds", s)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// minUnixMilli is the first millisecond of year 0, the earliest time an
// envelope encodes (maxUnixMilli the last of year 9999).
const minUnixMilli = -62167219200000
