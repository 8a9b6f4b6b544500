package heartbeat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// errSlowPath sends decodeHeartbeat to encoding/json.
var errSlowPath = errors.New("not the common heartbeat shape")

// decodeHeartbeat decodes and checks a heartbeat key's value read at now
// (see the protocol in docs/heartbeat-protocol.md): the monitor reads
// thousands per check, so the flat shape publishers write is parsed by
// hand; anything else (escapes, nested values, unknown layouts) goes
// through encoding/json, which has the last word on errors. A value that
// decodes is then checked (check): every error is a malformed instance.
func decodeHeartbeat(s string, now time.Time) (Heartbeat, error) {
	if len(s) > MaxValueLen {
		return Heartbeat{}, fmt.Errorf("value longer than %d bytes", MaxValueLen)
	}
	hb, err := fastDecode(s)
	if err != nil {
		var w wireJSON
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			return Heartbeat{}, jsonError(err)
		}
		if hb, err = w.heartbeat(); err != nil {
			return Heartbeat{}, err
		}
	}
	return hb, hb.check(now)
}

// jsonError says what was wrong with a value that is not a JSON object of
// the heartbeat's fields, in words an operator can act on.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Errorf("%s is a JSON %s, want %s", te.Field, te.Value, wantOf(te.Field))
		}
		return fmt.Errorf("the value is a JSON %s, not an object", te.Value)
	}
	return fmt.Errorf("not JSON: %w", err)
}

func wantOf(field string) string {
	switch field {
	case "status", "paused_by", "pause_reason":
		return "a string"
	default:
		return "a number"
	}
}

// check returns the first reason hb cannot be a heartbeat seen at now:
// a missing or implausible timestamp, a negative lag. Long strings are
// cut rather than refused.
func (h *Heartbeat) check(now time.Time) error {
	if h.Timestamp.IsZero() {
		return errors.New("timestamp is missing")
	}
	if err := checkTime(h.Timestamp, now); err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"last_message_at", h.LastMessageAt}, {"started_at", h.StartedAt}} {
		if !f.t.IsZero() {
			if err := checkTime(f.t, now); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	if h.ConsumerLag < 0 {
		return fmt.Errorf("consumer_lag %d is negative", h.ConsumerLag)
	}
	h.Status = Status(cut(string(h.Status), MaxStatusLen))
	h.PausedBy = cut(h.PausedBy, MaxStatusLen)
	h.PauseReason = cut(h.PauseReason, MaxPauseReasonLen)
	return nil
}

// parseTime reads a timestamp of the protocol: an RFC 3339 string with
// any fractional precision (lower-case t and z too), or a JSON number of
// epoch milliseconds. JSON null and absence are the zero time.
func parseTime(raw json.RawMessage) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return time.Time{}, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, err
		}
		return parseRFC3339(s)
	default:
		return parseMillis(string(raw))
	}
}

// parseRFC3339 parses an RFC 3339 time of any fractional precision.
func parseRFC3339(s string) (time.Time, error) {
	if strings.ContainsAny(s, "tz") {
		s = strings.ToUpper(s) // RFC 3339 allows lower case; time.Parse does not
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil && t.IsZero() {
		return t, fmt.Errorf("%w: %s is before 2000", errBadTime, s) // Go's zero time: not "absent"
	}
	if err != nil {
		if len(s) >= 19 && !strings.ContainsAny(s[19:], "Z+-") {
			return time.Time{}, fmt.Errorf("%q has no time zone: RFC 3339 needs Z or an offset such as +00:00", cut(s, 40))
		}
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", cut(s, 40))
	}
	return t, nil
}

// parseMillis parses epoch milliseconds (an integer, or a number with a
// fraction of a millisecond). A number below 1e11 (before 1973 in
// milliseconds) is refused: it is most likely epoch seconds.
func parseMillis(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1e11 {
			return time.Time{}, fmt.Errorf("%d is not epoch milliseconds (epoch seconds?): write milliseconds or an RFC 3339 string", n)
		}
		return time.UnixMilli(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f > 1e15 {
		return time.Time{}, fmt.Errorf("%s is neither an RFC 3339 string nor epoch milliseconds", cut(s, 40))
	}
	if f < 1e11 {
		return time.Time{}, fmt.Errorf("%s is not epoch milliseconds (epoch seconds?): write milliseconds or an RFC 3339 string", cut(s, 40))
	}
	return time.UnixMicro(int64(f * 1e3)), nil
}

// fastDecode parses a flat JSON object whose values are strings without
// escapes, integers or null.
func fastDecode(s string) (Heartbeat, error) {
	var (
		hb    Heartbeat
		seenT bool
		err   error
	)
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return hb, errSlowPath
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return hb, errSlowPath
	}
	for {
		var key, val string
		var isString, isNull bool
		if key, i, err = scanString(s, i); err != nil {
			return hb, err
		}
		i = skipSpace(s, i)
		if i >= len(s) || s[i] != ':' {
			return hb, errSlowPath
		}
		i = skipSpace(s, i+1)
		switch {
		case i < len(s) && s[i] == '"':
			isString = true
			if val, i, err = scanString(s, i); err != nil {
				return hb, err
			}
		case strings.HasPrefix(s[i:], "null"):
			isNull = true
			i += 4
		default:
			j := i
			for j < len(s) && (s[j] == '-' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			if j == i {
				return hb, errSlowPath
			}
			val, i = s[i:j], j
		}
		switch key {
		case "timestamp", "last_message_at", "started_at", "next_probe_at":
			var t time.Time
			switch {
			case isNull && key != "timestamp":
			case isString:
				if t, err = time.Parse(time.RFC3339Nano, val); err != nil || t.IsZero() {
					return hb, errSlowPath
				}
			case !isNull:
				if t, err = parseMillis(val); err != nil {
					return hb, errSlowPath
				}
			default:
				return hb, errSlowPath
			}
			switch key {
			case "timestamp":
				hb.Timestamp, seenT = t, true
			case "started_at":
				hb.StartedAt = t
			case "next_probe_at":
				hb.NextProbeAt = t
			default:
				hb.LastMessageAt = t
			}
		case "endpoint": // an object (a relay's): encoding/json reads and checks it
			return hb, errSlowPath
		case "status", "paused_by", "pause_reason":
			if !isString {
				return hb, errSlowPath
			}
			switch key {
			case "status":
				hb.Status = Status(val)
			case "paused_by":
				hb.PausedBy = val
			default:
				hb.PauseReason = val
			}
		case "consumer_lag":
			if isString {
				return hb, errSlowPath
			}
			if !isNull {
				if hb.ConsumerLag, err = strconv.ParseInt(val, 10, 64); err != nil {
					return hb, errSlowPath
				}
			}
		default:
			if !isString && !isNull {
				if _, err := strconv.ParseInt(val, 10, 64); err != nil {
					return hb, errSlowPath // a number the hand parser may have cut
				}
			}
		}
		i = skipSpace(s, i)
		if i >= len(s) {
			return hb, errSlowPath
		}
		if s[i] == '}' {
			if skipSpace(s, i+1) != len(s) || !seenT {
				return hb, errSlowPath
			}
			return hb, nil
		}
		if s[i] != ',' {
			return hb, errSlowPath
		}
		i = skipSpace(s, i+1)
	}
}

// scanString reads a JSON string without escapes starting at s[i] == '"'.
func scanString(s string, i int) (string, int, error) {
	if i >= len(s) || s[i] != '"' {
		return "", i, errSlowPath
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return s[i+1 : j], j + 1, nil
		case c == '\\' || c < 0x20:
			return "", i, errSlowPath
		}
	}
	return "", i, errSlowPath
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
