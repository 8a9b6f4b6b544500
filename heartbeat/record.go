package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is what a worker says about itself in its heartbeat, or what the
// monitor concludes when it says nothing.
type Status string

// Statuses. RUNNING, PAUSED and SHUTTING_DOWN are written by publishers;
// the others are the monitor's.
const (
	StatusRunning Status = "RUNNING"
	// StatusPaused: the instance runs but takes no message, because an
	// operator paused its worker or its kill switch tripped (see
	// Heartbeat.PausedBy).
	StatusPaused       Status = "PAUSED"
	StatusShuttingDown Status = "SHUTTING_DOWN"
	// StatusLate: the key expired but the last beat is more recent than
	// MissingAfter.
	StatusLate Status = "LATE"
	// StatusMissing: no beat for more than MissingAfter.
	StatusMissing Status = "MISSING"
	// StatusUnknown: Redis could not be read.
	StatusUnknown Status = "UNKNOWN"
)

// timeLayout is RFC 3339 in UTC with milliseconds: short thresholds (tests,
// sub-second intervals) need more than whole seconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Heartbeat is the JSON value of a worker:{type}:{instance} key.
type Heartbeat struct {
	// Timestamp is when the beat was written.
	Timestamp time.Time
	// Status is RUNNING or SHUTTING_DOWN.
	Status Status
	// LastMessageAt is when the worker last handled a message; zero (JSON
	// null) until it handled one.
	LastMessageAt time.Time
	// ConsumerLag is the lag the worker's consumer last reported.
	ConsumerLag int64
	// StartedAt is when the publisher was created; zero when absent.
	StartedAt time.Time
	// PausedBy says who paused a PAUSED instance: PausedByOperator or
	// PausedByKillSwitch; PauseReason says why, and NextProbeAt is when
	// a tripped kill switch lets its next probe message through (zero
	// for an operator's pause).
	PausedBy    string
	PauseReason string
	NextProbeAt time.Time
	// Endpoint is what a relay instance (redrive relay) says about the
	// HTTP endpoint it delivers to; nil for other workers.
	Endpoint *Endpoint
}

// Who paused an instance (Heartbeat.PausedBy), also the reason label of
// redrive_worker_paused.
const (
	PausedByOperator   = "operator"
	PausedByKillSwitch = "kill_switch"
)

type heartbeatJSON struct {
	Timestamp     string    `json:"timestamp"`
	Status        Status    `json:"status"`
	LastMessageAt *string   `json:"last_message_at"`
	ConsumerLag   int64     `json:"consumer_lag"`
	StartedAt     string    `json:"started_at,omitempty"`
	PausedBy      string    `json:"paused_by,omitempty"`
	PauseReason   string    `json:"pause_reason,omitempty"`
	NextProbeAt   string    `json:"next_probe_at,omitempty"`
	Endpoint      *Endpoint `json:"endpoint,omitempty"`
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// MarshalJSON writes the wire form: RFC 3339 UTC timestamps, null
// last_message_at before the first message.
func (h Heartbeat) MarshalJSON() ([]byte, error) {
	w := heartbeatJSON{
		Timestamp:   formatTime(h.Timestamp),
		Status:      h.Status,
		ConsumerLag: h.ConsumerLag,
	}
	if !h.LastMessageAt.IsZero() {
		s := formatTime(h.LastMessageAt)
		w.LastMessageAt = &s
	}
	if !h.StartedAt.IsZero() {
		w.StartedAt = formatTime(h.StartedAt)
	}
	w.PausedBy, w.PauseReason, w.Endpoint = h.PausedBy, h.PauseReason, h.Endpoint
	if !h.NextProbeAt.IsZero() {
		w.NextProbeAt = formatTime(h.NextProbeAt)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the wire form of any publisher (see
// docs/heartbeat-protocol.md): timestamps RFC 3339 of any precision or
// epoch milliseconds; a missing timestamp is an error. It does not judge
// whether the times are plausible: the monitor does.
func (h *Heartbeat) UnmarshalJSON(data []byte) error {
	var w wireJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return jsonError(err)
	}
	out, err := w.heartbeat()
	if err != nil {
		return err
	}
	if out.Timestamp.IsZero() {
		return errors.New("timestamp is missing")
	}
	*h = out
	return nil
}

// wireJSON is what a heartbeat value may hold: the timestamps are kept
// raw, since a publisher may write a string or a number.
type wireJSON struct {
	Timestamp     json.RawMessage `json:"timestamp"`
	Status        Status          `json:"status"`
	LastMessageAt json.RawMessage `json:"last_message_at"`
	ConsumerLag   *int64          `json:"consumer_lag"`
	StartedAt     json.RawMessage `json:"started_at"`
	PausedBy      string          `json:"paused_by"`
	PauseReason   string          `json:"pause_reason"`
	NextProbeAt   json.RawMessage `json:"next_probe_at"`
	Endpoint      *Endpoint       `json:"endpoint"`
}

// heartbeat converts w, naming the field whose time cannot be read.
func (w wireJSON) heartbeat() (Heartbeat, error) {
	out := Heartbeat{Status: w.Status, PausedBy: w.PausedBy, PauseReason: w.PauseReason, Endpoint: w.Endpoint}
	if w.ConsumerLag != nil {
		out.ConsumerLag = *w.ConsumerLag
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *time.Time
	}{
		{"timestamp", w.Timestamp, &out.Timestamp},
		{"last_message_at", w.LastMessageAt, &out.LastMessageAt},
		{"started_at", w.StartedAt, &out.StartedAt},
		{"next_probe_at", w.NextProbeAt, &out.NextProbeAt},
	} {
		t, err := parseTime(f.raw)
		if err != nil {
			return Heartbeat{}, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = t
	}
	return out, nil
}
