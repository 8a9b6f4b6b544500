package dlq

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// SparklineHours is how many hours of arrivals a Group counts
// (Group.Hourly): the last day.
const SparklineHours = 24

// Group limits (GroupQuery.Limit).
const (
	DefaultGroupLimit = 100
	MaxGroupLimit     = MaxLimit
)

// GroupQuery selects the failure groups of one DLQ, for Store.Groups.
type GroupQuery struct {
	// DLQ names the DLQ. Required.
	DLQ string
	// Now ends the hours of Group.Hourly: its last bucket is the hour
	// Now falls in. Zero = the store's clock.
	Now time.Time
	// Limit bounds the groups returned: 0 = DefaultGroupLimit, at most
	// MaxGroupLimit.
	Limit int
}

// Validate reports the first problem of q, naming the field, wrapped in
// ErrInvalidQuery.
func (q GroupQuery) Validate() error {
	switch {
	case !ValidName(q.DLQ):
		return fmt.Errorf("%w: dlq: %q is not a DLQ name", ErrInvalidQuery, q.DLQ)
	case q.Limit < 0 || q.Limit > MaxGroupLimit:
		return fmt.Errorf("%w: limit: %d is not between 1 and %d", ErrInvalidQuery, q.Limit, MaxGroupLimit)
	}
	return nil
}

// GroupLimit returns q.Limit with the default applied.
func (q GroupQuery) GroupLimit() int {
	if q.Limit == 0 {
		return DefaultGroupLimit
	}
	return q.Limit
}

// SparklineStart returns the start of the first hour of Group.Hourly for
// the groups asked at now: the hour now falls in, and the 23 before it.
func SparklineStart(now time.Time) time.Time {
	return now.UTC().Truncate(time.Hour).Add(-(SparklineHours - 1) * time.Hour)
}

// Group is a failure group: the live records of one DLQ sharing a
// failure fingerprint (the same error class, normalised error message and
// worker; see Fingerprint).
type Group struct {
	// Fingerprint identifies the group (the group= filter of listings and
	// replay-all).
	Fingerprint string
	// Message is the normalised error message (NormalizeMessage) shared
	// by the group; ErrorClass and Worker those of its records.
	Message    string
	ErrorClass string
	Worker     string
	// Count is how many live records the group holds (archived ones
	// aside); Pending how many of them are pending.
	Count, Pending int64
	// FirstSeen and LastSeen are when its first and last records were
	// received.
	FirstSeen, LastSeen time.Time
	// SampleID is the id of its newest record.
	SampleID string
	// Hourly counts the group's arrivals (all statuses) in each of the
	// last SparklineHours hours, oldest first, the last being the hour
	// of GroupQuery.Now (see SparklineStart).
	Hourly [SparklineHours]int64
}

// HourOf returns the index in Group.Hourly of the hour t falls in, for
// groups asked at now, and false when t is outside those hours.
func HourOf(t, now time.Time) (int, bool) {
	start := SparklineStart(now)
	if t.Before(start) {
		return 0, false
	}
	i := int(t.Sub(start) / time.Hour)
	return i, i < SparklineHours
}

// SortGroups orders groups as Store.Groups returns them: most pending
// first, then largest, then most recently seen, then by fingerprint.
func SortGroups(gs []Group) {
	slices.SortFunc(gs, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Pending, a.Pending), cmp.Compare(b.Count, a.Count),
			b.LastSeen.Compare(a.LastSeen), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
}
