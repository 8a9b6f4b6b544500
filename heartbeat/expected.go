package heartbeat

import (
	"slices"
	"time"
)

// NeverSeenInstance is the instance of the rows WithExpected adds.
const NeverSeenInstance = "-"

// WithExpected returns rows with a MISSING, CRITICAL row (instance
// NeverSeenInstance) for every worker type of expected that has no row:
// a configured worker of which no heartbeat was seen (within the
// monitor's ForgetAfter) is not running, or runs without publishing
// heartbeats. Rows of other types are kept: instances that beat without
// being configured. The added rows come after the others, in the order of
// expected.
func WithExpected(rows []WorkerStatus, expected []string, now time.Time) []WorkerStatus {
	out := slices.Clone(rows)
	for _, typ := range expected {
		if slices.ContainsFunc(rows, func(r WorkerStatus) bool { return r.Type == typ }) {
			continue
		}
		out = append(out, WorkerStatus{
			Type: typ, Instance: NeverSeenInstance, Status: StatusMissing, Severity: SeverityCritical,
			Conditions: []Condition{ConditionMissing}, CheckedAt: now,
			Reason: "configured, but no heartbeat seen: not running, or running without heartbeats (a redis: section in its configuration, or a publisher of docs/heartbeat-protocol.md)",
		})
	}
	return out
}
