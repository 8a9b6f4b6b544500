package heartbeat

import (
	"slices"
	"strings"
	"time"
)

// Severity grades a worker's health.
type Severity string

// Severities, from best to worst (see [Severity.Rank]).
const (
	SeverityOK       Severity = "OK"
	SeverityWarning  Severity = "WARNING"
	SeverityUnknown  Severity = "UNKNOWN"
	SeverityCritical Severity = "CRITICAL"
)

// severityOrder lists the severities from best to worst.
var severityOrder = []Severity{SeverityOK, SeverityWarning, SeverityUnknown, SeverityCritical}

// Rank orders severities: OK 0, WARNING 1, UNKNOWN 2, CRITICAL 3 (and
// anything else, as CRITICAL).
func (s Severity) Rank() int {
	if i := slices.Index(severityOrder, s); i >= 0 {
		return i
	}
	return len(severityOrder) - 1
}

// Label is the lower-case form used as a Prometheus label value.
func (s Severity) Label() string { return strings.ToLower(string(s)) }

// Worst returns the worst severity of rows, OK for none.
func Worst(rows []WorkerStatus) Severity {
	w := SeverityOK
	for _, r := range rows {
		if r.Severity.Rank() > w.Rank() {
			w = r.Severity
		}
	}
	return w
}

// Condition is one finding of the monitor about a worker; its fixed
// vocabulary is the condition label of redrive_worker_status.
type Condition string

// Conditions, each with the severity it implies (see [Condition.Severity]).
const (
	ConditionOK            Condition = "ok"             // RUNNING and healthy
	ConditionShuttingDown  Condition = "shutting_down"  // SHUTTING_DOWN within its limit
	ConditionPaused        Condition = "paused"         // PAUSED by an operator or its kill switch
	ConditionLate          Condition = "late"           // key expired, last beat within MissingAfter
	ConditionMissing       Condition = "missing"        // no beat for more than MissingAfter
	ConditionStuck         Condition = "stuck"          // lag > 0 and no message for IdleAfter
	ConditionLagWarning    Condition = "lag_warning"    // lag above the warning threshold
	ConditionLagCritical   Condition = "lag_critical"   // lag above the critical threshold
	ConditionShutdownStuck Condition = "shutdown_stuck" // SHUTTING_DOWN for more than ShutdownStuckAfter
	ConditionMalformed     Condition = "malformed"      // heartbeat JSON that cannot be read
	ConditionUnknown       Condition = "unknown"        // Redis could not be read
)

// Severity is the severity the condition implies.
func (c Condition) Severity() Severity {
	switch c {
	case ConditionMissing, ConditionLagCritical:
		return SeverityCritical
	case ConditionPaused, ConditionStuck, ConditionLagWarning, ConditionShutdownStuck, ConditionMalformed:
		return SeverityWarning
	case ConditionUnknown:
		return SeverityUnknown
	default:
		return SeverityOK
	}
}

// WorkerStatus is one row of the health table: one instance of one worker
// type.
type WorkerStatus struct {
	// Type is the worker name; Instance identifies the process. Both are
	// "*" on the one row Check returns when Redis is unreachable and no
	// worker was seen before.
	Type     string
	Instance string
	// Status is RUNNING, PAUSED or SHUTTING_DOWN as the worker said, or LATE,
	// MISSING or UNKNOWN as the monitor concluded.
	Status Status
	// Severity is the worst severity of Conditions.
	Severity Severity
	// Conditions met, worst first; never empty.
	Conditions []Condition
	// LastSeen is the time of the last beat (zero when unknown).
	LastSeen time.Time
	// LastMessageAt is when the worker last handled a message (zero when
	// never or unknown).
	LastMessageAt time.Time
	// Lag is the consumer lag the worker last reported.
	Lag int64
	// PausedBy, PauseReason and NextProbeAt are the heartbeat's, for a
	// PAUSED instance.
	PausedBy    string
	PauseReason string
	NextProbeAt time.Time
	// Endpoint is what a relay instance last said about its HTTP
	// endpoint (Heartbeat.Endpoint); nil for other workers.
	Endpoint *Endpoint
	// Reason explains the severity in words.
	Reason string
	// CheckedAt is when the row was evaluated.
	CheckedAt time.Time
}

// Paused reports whether the instance beats PAUSED and is not missing: it
// is alive but takes no message.
func (w WorkerStatus) Paused() bool {
	return w.Status == StatusPaused && !slices.Contains(w.Conditions, ConditionMissing)
}

// Running reports whether the instance beats RUNNING and is not missing:
// it takes messages, though it may be stuck or lagging.
func (w WorkerStatus) Running() bool {
	return w.Status == StatusRunning && !slices.Contains(w.Conditions, ConditionMissing)
}
