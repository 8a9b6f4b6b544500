package heartbeat

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// What the monitor accepts from Redis. Every value it reads was written by
// someone (redrive's publisher, a worker in another language, an operator
// with redis-cli) and is checked like a message from a broker: a value
// out of these bounds is a malformed instance, or is left out and counted
// (Monitor.Dropped), never a crash.
const (
	// MaxNameLen bounds a worker type or instance name read from Redis, in
	// bytes; longer ones are left out (Dropped.BadNames).
	MaxNameLen = 256
	// MaxValueLen bounds a heartbeat value: the monitor reads at most this
	// many bytes of a key (GETRANGE), and a longer value is malformed.
	MaxValueLen = 16 << 10
	// MaxStatusLen bounds the status, paused_by and pause_reason a
	// heartbeat reports; longer ones are cut (with "…").
	MaxStatusLen = 64
	// maxClockSkew is how far in the future a timestamp may be before it
	// is no time at all (a clock that far ahead, or a value written by
	// hand).
	maxClockSkew = 5 * time.Minute
)

// minPlausible is the earliest time a heartbeat can carry: before it, a
// number is most likely epoch seconds read as milliseconds.
var minPlausible = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// errBadTime is wrapped by the errors of checkTime.
var errBadTime = errors.New("not a plausible time")

// checkTime returns an error when t cannot be the time of a beat seen at
// now: before 2000, or more than five minutes ahead of now.
func checkTime(t, now time.Time) error {
	switch {
	case t.Before(minPlausible):
		return fmt.Errorf("%w: %s is before 2000", errBadTime, t.UTC().Format(time.RFC3339Nano))
	case t.After(now.Add(maxClockSkew)):
		return fmt.Errorf("%w: %s is %s in the future", errBadTime, t.UTC().Format(time.RFC3339Nano), short(t.Sub(now)))
	}
	return nil
}

// scoreTime is the time of a registry score (unix seconds), checked.
func scoreTime(score float64, now time.Time) (time.Time, error) {
	if math.IsNaN(score) || math.IsInf(score, 0) || score <= 0 || score > 1e11 {
		return time.Time{}, fmt.Errorf("%w: score %g", errBadTime, score)
	}
	t := fromUnixSeconds(score)
	if err := checkTime(t, now); err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// validName reports whether s can name a worker type (colon-free) or an
// instance read from Redis: 1 to MaxNameLen bytes of UTF-8. Control
// characters are kept (and escaped wherever they are printed): the name
// is the worker's, and hiding it would hide the worker.
func validName(s string, isType bool) bool {
	return s != "" && len(s) <= MaxNameLen && utf8.ValidString(s) && (!isType || !strings.Contains(s, ":"))
}

// cut returns s cut to at most n bytes on a rune boundary, with "…" when
// it was cut, and invalid UTF-8 replaced.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
