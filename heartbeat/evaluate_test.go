package heartbeat

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	now := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cfg := MonitorConfig{
		MissingAfter: time.Minute, IdleAfter: 5 * time.Minute, ShutdownStuckAfter: 2 * time.Minute,
		LagThresholds: map[string]LagThreshold{"w": {Warning: 100, Critical: 500}, "warn-only": {Warning: 10}},
	}
	running := func(lag int64, lastMsg time.Time) *Heartbeat {
		return &Heartbeat{Timestamp: ago(5 * time.Second), Status: StatusRunning, ConsumerLag: lag, LastMessageAt: lastMsg, StartedAt: ago(time.Hour)}
	}
	tests := []struct {
		name   string
		obs    Observation
		status Status
		sev    Severity
		conds  []Condition
		reason string // substring
	}{
		{"healthy", Observation{Type: "w", Heartbeat: running(0, ago(time.Second))}, StatusRunning, SeverityOK, []Condition{ConditionOK}, ""},
		{"key expired recently", Observation{Type: "w", LastSeen: ago(40 * time.Second)}, StatusLate, SeverityOK, []Condition{ConditionLate}, "last beat 40s ago"},
		{"key expired long ago", Observation{Type: "w", LastSeen: ago(61 * time.Second)}, StatusMissing, SeverityCritical, []Condition{ConditionMissing}, "no heartbeat for 1m1s"},
		{"key outlived its writer", Observation{Type: "w", Heartbeat: &Heartbeat{Timestamp: ago(2 * time.Minute), Status: StatusRunning}}, StatusRunning, SeverityCritical, []Condition{ConditionMissing}, "no heartbeat for 2m0s"},
		{"stuck", Observation{Type: "x", Heartbeat: running(3, ago(6*time.Minute))}, StatusRunning, SeverityWarning, []Condition{ConditionStuck}, "no message for 6m0s while lag is 3"},
		{"idle at limit", Observation{Type: "x", Heartbeat: running(3, ago(5*time.Minute))}, StatusRunning, SeverityOK, []Condition{ConditionOK}, ""},
		{"never handled, started long ago", Observation{Type: "x", Heartbeat: running(3, time.Time{})}, StatusRunning, SeverityWarning, []Condition{ConditionStuck}, "no message since it started 1h0m0s ago"},
		{"never handled, no lag", Observation{Type: "x", Heartbeat: running(0, time.Time{})}, StatusRunning, SeverityOK, []Condition{ConditionOK}, ""},
		{"lag warning", Observation{Type: "w", Heartbeat: running(101, now)}, StatusRunning, SeverityWarning, []Condition{ConditionLagWarning}, "lag 101 above warning 100"},
		{"lag at warning", Observation{Type: "w", Heartbeat: running(100, now)}, StatusRunning, SeverityOK, []Condition{ConditionOK}, ""},
		{"lag critical", Observation{Type: "w", Heartbeat: running(501, now)}, StatusRunning, SeverityCritical, []Condition{ConditionLagCritical}, "lag 501 above critical 500"},
		{"critical off", Observation{Type: "warn-only", Heartbeat: running(10000, now)}, StatusRunning, SeverityWarning, []Condition{ConditionLagWarning}, ""},
		{"no thresholds for type", Observation{Type: "x", Heartbeat: running(10000, now)}, StatusRunning, SeverityOK, []Condition{ConditionOK}, ""},
		{"lag critical and stuck", Observation{Type: "w", Heartbeat: running(900, ago(10*time.Minute))}, StatusRunning, SeverityCritical, []Condition{ConditionLagCritical, ConditionStuck}, "lag 900 above critical 500; no message for 10m0s"},
		{"shutting down", Observation{Type: "w", StoppingSince: ago(30 * time.Second), Heartbeat: &Heartbeat{Timestamp: ago(30 * time.Second), Status: StatusShuttingDown}}, StatusShuttingDown, SeverityOK, []Condition{ConditionShuttingDown}, "shutting down for 30s"},
		{"shutting down, key expired", Observation{Type: "w", LastSeen: ago(90 * time.Second), StoppingSince: ago(90 * time.Second)}, StatusShuttingDown, SeverityOK, []Condition{ConditionShuttingDown}, ""},
		{"shutdown stuck", Observation{Type: "w", LastSeen: ago(3 * time.Minute), StoppingSince: ago(3 * time.Minute)}, StatusShuttingDown, SeverityWarning, []Condition{ConditionShutdownStuck}, "shutting down for 3m0s (WARNING after 2m0s)"},
		{"shutdown stuck, key present without mark", Observation{Type: "w", Heartbeat: &Heartbeat{Timestamp: ago(150 * time.Second), Status: StatusShuttingDown}}, StatusShuttingDown, SeverityWarning, []Condition{ConditionShutdownStuck}, ""},
		{"running again after a shutdown mark", Observation{Type: "w", StoppingSince: ago(time.Hour), Heartbeat: running(0, now)}, StatusRunning, SeverityOK, []Condition{ConditionOK}, ""},
		{"unknown status", Observation{Type: "w", Heartbeat: &Heartbeat{Timestamp: now, Status: "NAPPING"}}, "NAPPING", SeverityWarning, []Condition{ConditionMalformed}, `unknown status "NAPPING"`},
		{"paused by an operator", Observation{Type: "w", Heartbeat: &Heartbeat{Timestamp: now, Status: StatusPaused, ConsumerLag: 50, StartedAt: ago(time.Hour),
			PausedBy: PausedByOperator, PauseReason: "db maintenance"}}, StatusPaused, SeverityWarning, []Condition{ConditionPaused}, "paused (operator: db maintenance)"},
		{"paused by the kill switch", Observation{Type: "w", Heartbeat: &Heartbeat{Timestamp: now, Status: StatusPaused,
			PausedBy: PausedByKillSwitch, PauseReason: "20 of 20 calls failed", NextProbeAt: now.Add(12 * time.Second)}}, StatusPaused, SeverityWarning, []Condition{ConditionPaused}, "paused (kill_switch: 20 of 20 calls failed; next probe in 12s)"},
		{"paused and missing", Observation{Type: "w", Heartbeat: &Heartbeat{Timestamp: ago(time.Hour), Status: StatusPaused, PausedBy: PausedByOperator}}, StatusPaused, SeverityCritical, []Condition{ConditionMissing}, ""},
		{"undecodable", Observation{Type: "w", LastSeen: ago(time.Second), DecodeErr: errors.New("bad")}, StatusUnknown, SeverityWarning, []Condition{ConditionMalformed}, "bad"},
		{"undecodable and old", Observation{Type: "w", LastSeen: ago(time.Hour), DecodeErr: errors.New("bad")}, StatusUnknown, SeverityCritical, []Condition{ConditionMissing, ConditionMalformed}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := Evaluate(cfg, now, []Observation{tt.obs})
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			if r.Status != tt.status || r.Severity != tt.sev || !slices.Equal(r.Conditions, tt.conds) {
				t.Errorf("got %s %s %v (%q), want %s %s %v", r.Status, r.Severity, r.Conditions, r.Reason, tt.status, tt.sev, tt.conds)
			}
			if !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", r.Reason, tt.reason)
			}
			if !r.CheckedAt.Equal(now) {
				t.Errorf("CheckedAt = %s", r.CheckedAt)
			}
		})
	}
}

func TestEvaluateSortsAndDefaults(t *testing.T) {
	now := time.Now()
	rows := Evaluate(MonitorConfig{}, now, []Observation{
		{Type: "b", Instance: "1", LastSeen: now.Add(-59 * time.Second)},
		{Type: "a", Instance: "2", LastSeen: now.Add(-61 * time.Second)},
		{Type: "a", Instance: "1", LastSeen: now},
	})
	var got []string
	for _, r := range rows {
		got = append(got, r.Type+"/"+r.Instance+"="+string(r.Status))
	}
	want := []string{"a/1=LATE", "a/2=MISSING", "b/1=LATE"}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v (sorted; default MissingAfter 60s)", got, want)
	}
}

func TestHeartbeatJSON(t *testing.T) {
	hb := Heartbeat{
		Timestamp:   time.Date(2025, 1, 15, 11, 30, 0, 123456789, time.FixedZone("CET", 3600)),
		Status:      StatusRunning,
		ConsumerLag: 7,
	}
	data, err := json.Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":"2025-01-15T10:30:00.123Z","status":"RUNNING","last_message_at":null,"consumer_lag":7}`
	if string(data) != want {
		t.Errorf("Marshal = %s, want %s", data, want)
	}
	var back Heartbeat
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Timestamp.Equal(hb.Timestamp.Truncate(time.Millisecond)) || back.Status != hb.Status || back.ConsumerLag != 7 || !back.LastMessageAt.IsZero() {
		t.Errorf("round trip = %+v, want %+v", back, hb)
	}

	in := `{"timestamp":"2025-01-15T10:30:00Z","status":"SHUTTING_DOWN","last_message_at":"2025-01-15T10:29:00+01:00","consumer_lag":0,"started_at":"2025-01-15T09:00:00Z"}`
	if err := json.Unmarshal([]byte(in), &back); err != nil {
		t.Fatal(err)
	}
	if back.Status != StatusShuttingDown || !back.LastMessageAt.Equal(time.Date(2025, 1, 15, 9, 29, 0, 0, time.UTC)) || back.StartedAt.Hour() != 9 {
		t.Errorf("Unmarshal(%s) = %+v", in, back)
	}
	for _, bad := range []string{`{"timestamp":"yesterday"}`, `{"timestamp":"2025-01-15T10:30:00Z","last_message_at":"x"}`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
}
