package heartbeat

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// errSlowPath sends decodeHeartbeat to encoding/json.
var errSlowPath = errors.New("not the common heartbeat shape")

// decodeHeartbeat decodes a heartbeat key's value. The monitor reads
// thousands per check, so the flat shape publishers write is parsed by
// hand; anything else (escapes, other value kinds, unknown layouts) goes
// through encoding/json, which has the last word on errors.
func decodeHeartbeat(s string) (Heartbeat, error) {
	if hb, err := fastDecode(s); err == nil {
		return hb, nil
	}
	var hb Heartbeat
	err := json.Unmarshal([]byte(s), &hb)
	return hb, err
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
		case "timestamp":
			if !isString {
				return hb, errSlowPath
			}
			if hb.Timestamp, err = time.Parse(time.RFC3339Nano, val); err != nil {
				return hb, errSlowPath
			}
			seenT = true
		case "status":
			if !isString {
				return hb, errSlowPath
			}
			hb.Status = Status(val)
		case "paused_by", "pause_reason":
			if !isString {
				return hb, errSlowPath
			}
			if key == "paused_by" {
				hb.PausedBy = val
			} else {
				hb.PauseReason = val
			}
		case "last_message_at", "started_at", "next_probe_at":
			if isNull {
				break
			}
			if !isString {
				return hb, errSlowPath
			}
			t, err := time.Parse(time.RFC3339Nano, val)
			if err != nil {
				return hb, errSlowPath
			}
			switch key {
			case "started_at":
				hb.StartedAt = t
			case "next_probe_at":
				hb.NextProbeAt = t
			default:
				hb.LastMessageAt = t
			}
		case "endpoint": // an object (a relay's): encoding/json reads and checks it
			return hb, errSlowPath
		case "consumer_lag":
			if isString || isNull {
				return hb, errSlowPath
			}
			if hb.ConsumerLag, err = strconv.ParseInt(val, 10, 64); err != nil {
				return hb, errSlowPath
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
