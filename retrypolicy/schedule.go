package retrypolicy

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Schedule is an explicit list of delays: retry n waits Delays[n-1]. When
// more retries are allowed than there are delays, the last delay repeats
// unless NoRepeat is set, in which case retries past the list use no delay.
type Schedule struct {
	Delays   []time.Duration
	NoRepeat bool
}

// Delay implements Backoff.
func (s Schedule) Delay(n int) time.Duration {
	if len(s.Delays) == 0 || n < 1 {
		return 0
	}
	if n <= len(s.Delays) {
		return s.Delays[n-1]
	}
	if s.NoRepeat {
		return 0
	}
	return s.Delays[len(s.Delays)-1]
}

// String renders s as "1s -> 5s -> 30s". ParseSchedule reads it back.
func (s Schedule) String() string {
	parts := make([]string, len(s.Delays))
	for i, d := range s.Delays {
		parts[i] = FormatDuration(d)
	}
	return strings.Join(parts, " -> ")
}

// Validate rejects empty schedules and negative delays.
func (s Schedule) Validate() error {
	if len(s.Delays) == 0 {
		return fmt.Errorf("%w: schedule has no delays", ErrInvalid)
	}
	for i, d := range s.Delays {
		if d < 0 {
			return fmt.Errorf("%w: step %d: %s is negative", ErrInvalid, i+1, d)
		}
	}
	return nil
}

// longest returns the longest delay of the first n retries.
func (s Schedule) longest(n int) time.Duration {
	var longest time.Duration
	for _, d := range s.Delays[:min(n, len(s.Delays))] {
		longest = max(longest, d)
	}
	return longest
}

// ScheduleError is ParseSchedule's error for a schedule with bad steps:
// every one of them, not only the first. It wraps ErrInvalid.
type ScheduleError struct {
	// Schedule is the text parsed.
	Schedule string
	// Steps say what is wrong with each bad step, in order:
	// `step 2: "5x" is not a duration`, `step 3 is empty`.
	Steps []string
}

// Error lists every bad step on one line.
func (e *ScheduleError) Error() string {
	return fmt.Sprintf("%s: schedule %q: %s", ErrInvalid, e.Schedule, strings.Join(e.Steps, "; "))
}

// Unwrap returns ErrInvalid.
func (e *ScheduleError) Unwrap() error { return ErrInvalid }

// ParseSchedule parses "1s -> 5s -> 30s -> 5m -> 30m". Steps are separated
// by "->" or commas; each step is a duration as ParseDuration reads it.
// Empty and negative steps are errors that name the step (1-based); a
// *ScheduleError reports every bad step.
func ParseSchedule(s string) (Schedule, error) {
	if strings.TrimSpace(s) == "" {
		return Schedule{}, fmt.Errorf("%w: schedule %q is empty", ErrInvalid, s)
	}
	steps := strings.Split(strings.ReplaceAll(s, "->", ","), ",")
	sch := Schedule{Delays: make([]time.Duration, 0, len(steps))}
	bad := &ScheduleError{Schedule: s}
	for i, f := range steps {
		f = strings.TrimSpace(f)
		if f == "" {
			bad.Steps = append(bad.Steps, fmt.Sprintf("step %d is empty", i+1))
			continue
		}
		d, problem := parseDuration(f)
		if problem == "" && d < 0 {
			problem = "is negative"
		}
		if problem != "" {
			bad.Steps = append(bad.Steps, fmt.Sprintf("step %d: %q %s", i+1, f, problem))
			continue
		}
		sch.Delays = append(sch.Delays, d)
	}
	if len(bad.Steps) > 0 {
		return Schedule{}, bad
	}
	return sch, nil
}

// ParseDuration reads a Go duration ("1.5s", "5m", "1h30m") and also whole
// days ("30d", "2d12h"), which time.ParseDuration does not. A day is 24
// hours.
func ParseDuration(s string) (time.Duration, error) {
	d, problem := parseDuration(strings.TrimSpace(s))
	if problem != "" {
		return 0, fmt.Errorf("%w: %q %s", ErrInvalid, s, problem)
	}
	return d, nil
}

const maxDays = math.MaxInt64 / int64(24*time.Hour)

// parseDuration is ParseDuration on a trimmed string; it returns what is
// wrong with s, or "".
func parseDuration(s string) (time.Duration, string) {
	const notDuration = "is not a duration"
	if s == "" {
		return 0, "is empty"
	}
	i := strings.IndexByte(s, 'd')
	if i < 0 {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, notDuration
		}
		return d, ""
	}
	if i == 0 {
		return 0, notDuration
	}
	var n int64
	for _, c := range s[:i] {
		if c < '0' || c > '9' {
			return 0, notDuration
		}
		n = n*10 + int64(c-'0')
		if n > maxDays {
			return 0, "is out of range"
		}
	}
	days := time.Duration(n) * 24 * time.Hour
	rest := s[i+1:]
	if rest == "" {
		return days, ""
	}
	if rest[0] == '+' || rest[0] == '-' {
		return 0, notDuration
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, notDuration
	}
	if d > math.MaxInt64-days {
		return 0, "is out of range"
	}
	return days + d, ""
}

// FormatDuration renders d compactly: "1s", "5m", "1h30m", "1.5s".
// ParseDuration reads it back.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
