package heartbeat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Observation is what Redis holds about one instance: its registry entry,
// its shutdown mark and its heartbeat key.
type Observation struct {
	Type     string
	Instance string
	// LastSeen is the registry's time of the last beat.
	LastSeen time.Time
	// StoppingSince is when the instance began shutting down; zero when it
	// did not.
	StoppingSince time.Time
	// Heartbeat is the decoded key; nil when the key expired (or could not
	// be decoded, see DecodeErr).
	Heartbeat *Heartbeat
	// DecodeErr is set when the key holds a value that is not a heartbeat.
	DecodeErr error
}

// Evaluate grades observations at now with cfg's thresholds (defaults
// filled in) and returns one row per observation, sorted by type then
// instance. It does no I/O; Monitor.Check reads Redis and calls it.
func Evaluate(cfg MonitorConfig, now time.Time, obs []Observation) []WorkerStatus {
	cfg = cfg.WithDefaults()
	rows := make([]WorkerStatus, len(obs))
	for i, o := range obs {
		rows[i] = evaluate(cfg, now, o)
	}
	slices.SortFunc(rows, func(a, b WorkerStatus) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Instance, b.Instance))
	})
	return rows
}

type finding struct {
	cond   Condition
	reason string
}

func evaluate(cfg MonitorConfig, now time.Time, o Observation) WorkerStatus {
	ws := WorkerStatus{Type: o.Type, Instance: o.Instance, LastSeen: o.LastSeen, CheckedAt: now}
	var found []finding
	add := func(c Condition, format string, args ...any) {
		found = append(found, finding{c, fmt.Sprintf(format, args...)})
	}
	missing := func(since time.Time) bool {
		age := now.Sub(since)
		if age > cfg.MissingAfter {
			add(ConditionMissing, "no heartbeat for %s (CRITICAL after %s)", short(age), short(cfg.MissingAfter))
			return true
		}
		return false
	}
	shutdown := func(since time.Time) {
		d := now.Sub(since)
		if d > cfg.ShutdownStuckAfter {
			add(ConditionShutdownStuck, "shutting down for %s (WARNING after %s): draining did not finish, or the process exited without deregistering", short(d), short(cfg.ShutdownStuckAfter))
		} else {
			add(ConditionShuttingDown, "shutting down for %s", short(d))
		}
	}

	hb := o.Heartbeat
	switch {
	case o.DecodeErr != nil:
		ws.Status = StatusUnknown
		add(ConditionMalformed, "heartbeat key holds no valid heartbeat: %v", o.DecodeErr)
		if !o.LastSeen.IsZero() {
			missing(o.LastSeen)
		}
	case hb == nil && !o.StoppingSince.IsZero():
		ws.Status = StatusShuttingDown
		shutdown(o.StoppingSince)
	case hb == nil:
		if missing(o.LastSeen) {
			ws.Status = StatusMissing
		} else {
			ws.Status = StatusLate
			add(ConditionLate, "heartbeat key expired, last beat %s ago (CRITICAL after %s)", short(now.Sub(o.LastSeen)), short(cfg.MissingAfter))
		}
	default:
		ws.Status = hb.Status
		ws.LastSeen = hb.Timestamp
		ws.LastMessageAt = hb.LastMessageAt
		ws.Lag = hb.ConsumerLag
		ws.Endpoint = hb.Endpoint
		switch hb.Status {
		case StatusShuttingDown:
			since := o.StoppingSince
			if since.IsZero() {
				since = hb.Timestamp
			}
			shutdown(since)
		case StatusRunning, StatusPaused:
			ws.PausedBy, ws.PauseReason, ws.NextProbeAt = hb.PausedBy, hb.PauseReason, hb.NextProbeAt
			// A key that outlived its writer (a TTL above MissingAfter,
			// or a clock skew) is as good as missing.
			if missing(hb.Timestamp) {
				break
			}
			if t, ok := cfg.LagThresholds[o.Type]; ok {
				switch {
				case t.Critical > 0 && hb.ConsumerLag > t.Critical:
					add(ConditionLagCritical, "lag %d above critical %d", hb.ConsumerLag, t.Critical)
				case t.Warning > 0 && hb.ConsumerLag > t.Warning:
					add(ConditionLagWarning, "lag %d above warning %d", hb.ConsumerLag, t.Warning)
				}
			}
			if hb.Status == StatusPaused {
				add(ConditionPaused, "%s", pausedText(hb, now))
			}
			if hb.ConsumerLag > 0 && hb.Status == StatusRunning {
				switch {
				case !hb.LastMessageAt.IsZero() && now.Sub(hb.LastMessageAt) > cfg.IdleAfter:
					add(ConditionStuck, "no message for %s while lag is %d (WARNING after %s)", short(now.Sub(hb.LastMessageAt)), hb.ConsumerLag, short(cfg.IdleAfter))
				case hb.LastMessageAt.IsZero() && !hb.StartedAt.IsZero() && now.Sub(hb.StartedAt) > cfg.IdleAfter:
					add(ConditionStuck, "no message since it started %s ago while lag is %d (WARNING after %s)", short(now.Sub(hb.StartedAt)), hb.ConsumerLag, short(cfg.IdleAfter))
				}
			}
		default:
			add(ConditionMalformed, "unknown status %q", hb.Status)
		}
	}

	if len(found) == 0 {
		found = append(found, finding{cond: ConditionOK})
	}
	slices.SortStableFunc(found, func(a, b finding) int {
		return cmp.Compare(b.cond.Severity().Rank(), a.cond.Severity().Rank())
	})
	reasons := make([]string, 0, len(found))
	for _, f := range found {
		ws.Conditions = append(ws.Conditions, f.cond)
		if f.reason != "" {
			reasons = append(reasons, f.reason)
		}
	}
	ws.Severity = found[0].cond.Severity()
	ws.Reason = strings.Join(reasons, "; ")
	return ws
}

// pausedText says who paused an instance, why, and when it probes next:
// "paused (operator: downstream maintenance)", "paused (kill_switch:
// ...; next probe in 12s)".
func pausedText(hb *Heartbeat, now time.Time) string {
	s := "paused (" + hb.PausedBy
	if hb.PauseReason != "" {
		s += ": " + hb.PauseReason
	}
	if !hb.NextProbeAt.IsZero() {
		s += "; next probe in " + short(max(hb.NextProbeAt.Sub(now), 0))
	}
	return s + ")"
}

// short rounds d for people: whole seconds from one second up,
// milliseconds below.
func short(d time.Duration) string {
	if d >= time.Second || d <= -time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
