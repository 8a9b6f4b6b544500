package kafka

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
)

// rawEnvelope is the envelope as DecodeEnvelope reads it; pointers tell an
// absent member from a zero one.
type rawEnvelope struct {
	MessageID               string            `json:"message_id"`
	OriginalTopic           *string           `json:"original_topic"`
	OriginalPartition       *int32            `json:"original_partition"`
	OriginalOffset          *int64            `json:"original_offset"`
	OriginalKey             *string           `json:"original_key"`
	OriginalKeyEncoding     string            `json:"original_key_encoding"`
	OriginalValue           json.RawMessage   `json:"original_value"`
	OriginalValueEncoding   string            `json:"original_value_encoding"`
	OriginalHeaders         map[string]string `json:"original_headers"`
	OriginalHeadersEncoding map[string]string `json:"original_headers_encoding"`
	OriginalBinaryHeaders   map[string]string `json:"original_binary_headers"`
	OriginalWire            *string           `json:"original_wire"`
	ErrorDetails            struct {
		ExceptionClass string `json:"exception_class"`
		Message        string `json:"message"`
		StackTrace     string `json:"stack_trace"`
	} `json:"error_details"`
	Reason         string `json:"reason"`
	RetryCount     int    `json:"retry_count"`
	Worker         string `json:"worker"`
	WorkerInstance string `json:"worker_instance"`
	Source         string `json:"source"`
	FirstFailureAt string `json:"first_failure_at"`
	LastFailureAt  string `json:"last_failure_at"`
}

// DecodeEnvelope parses an envelope written by EncodeEnvelope (or by hand,
// following the same format) back into an Entry, with the original key,
// value and headers byte for byte. Absent original_partition and
// original_offset read as -1. Unknown members are ignored; unknown encodings
// are errors. When data is not an envelope at all the error wraps
// ErrNotEnvelope.
func DecodeEnvelope(data []byte) (dlq.Entry, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %w: not a JSON object", ErrNotEnvelope)
	}
	var raw rawEnvelope
	err := json.Unmarshal(data, &raw)
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %w: %w", ErrNotEnvelope, err)
	case raw.OriginalTopic == nil:
		if err != nil {
			return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %w: %w", ErrNotEnvelope, err)
		}
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %w: no original_topic", ErrNotEnvelope)
	case err != nil:
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %s: %w", typeErr.Field, err)
		}
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %w", err)
	}

	e := dlq.Entry{
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
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: retry_count: %d is negative", e.RetryCount)
	}
	if e.OriginalKey, err = decodeKey(raw.OriginalKey, raw.OriginalKeyEncoding); err != nil {
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: original_key: %w", err)
	}
	if e.OriginalValue, err = decodeValue(raw.OriginalValue, raw.OriginalValueEncoding); err != nil {
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: original_value: %w", err)
	}
	if e.OriginalHeaders, err = decodeHeaders(&raw); err != nil {
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: %w", err)
	}
	if raw.OriginalWire != nil {
		if e.OriginalWire, err = decodeBase64(*raw.OriginalWire); err != nil {
			return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: original_wire: %w", err)
		}
		if _, err := wire.Decode(e.OriginalWire); err != nil {
			return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: original_wire: %w", err)
		}
	}
	if e.FirstFailureAt, err = decodeTime(raw.FirstFailureAt); err != nil {
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: first_failure_at: %w", err)
	}
	if e.LastFailureAt, err = decodeTime(raw.LastFailureAt); err != nil {
		return dlq.Entry{}, fmt.Errorf("dlq: decode envelope: last_failure_at: %w", err)
	}
	return e, nil
}

func decodeKey(key *string, enc string) ([]byte, error) {
	switch enc {
	case "", EncodingUTF8, EncodingBase64:
	default:
		return nil, fmt.Errorf("unknown encoding %q", enc)
	}
	if key == nil {
		return nil, nil
	}
	if enc == EncodingBase64 {
		return decodeBase64(*key)
	}
	return []byte(*key), nil
}

func decodeValue(v json.RawMessage, enc string) ([]byte, error) {
	isNull := len(v) == 0 || string(v) == "null"
	switch enc {
	case "":
		if !isNull {
			return nil, errors.New("original_value_encoding is missing")
		}
		return nil, nil
	case EncodingJSON:
		if len(v) == 0 {
			return nil, errors.New("missing")
		}
		return slices.Clip(v), nil
	case EncodingUTF8, EncodingBase64:
		if len(v) == 0 || v[0] != '"' {
			return nil, fmt.Errorf("encoding %s needs a JSON string", enc)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
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

func decodeHeaders(raw *rawEnvelope) (map[string]string, error) {
	for k := range raw.OriginalHeadersEncoding {
		if _, ok := raw.OriginalHeaders[k]; !ok {
			return nil, fmt.Errorf("original_headers_encoding: header %q is not in original_headers", k)
		}
	}
	h := raw.OriginalHeaders
	for k, v := range h {
		switch enc := raw.OriginalHeadersEncoding[k]; enc {
		case "", EncodingUTF8:
		case EncodingBase64:
			b, err := decodeBase64(v)
			if err != nil {
				return nil, fmt.Errorf("original_headers: %q: %w", k, err)
			}
			h[k] = string(b)
		default:
			return nil, fmt.Errorf("original_headers_encoding: %q: unknown encoding %q", k, enc)
		}
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

func decodeTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	return t.UTC(), nil
}
