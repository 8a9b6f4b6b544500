package dlq

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Arrival query limits.
const (
	// MaxArrivalBuckets bounds ArrivalsQuery.Buckets.
	MaxArrivalBuckets = 500
	// MinArrivalStep is the narrowest ArrivalsQuery.Step.
	MinArrivalStep = time.Minute
	// MaxArrivalGroups bounds ArrivalsQuery.Groups.
	MaxArrivalGroups = 50
)

// ArrivalsQuery selects the dead-letter arrivals Store.Arrivals counts:
// those of one DLQ received in [Since, Since + Buckets × Step), live and
// archived alike, per bucket of Step. A store reads only that window
// (pgstore: a range of the (dlq, received_at) indexes), however many
// entries the DLQ holds.
type ArrivalsQuery struct {
	// DLQ names the DLQ. Required.
	DLQ string
	// Since starts the first bucket. Required.
	Since time.Time
	// Step is each bucket's width: at least MinArrivalStep.
	Step time.Duration
	// Buckets is how many buckets: 1 to MaxArrivalBuckets.
	Buckets int
	// Groups asks for the arrivals of the failure groups with the most
	// arrivals in the window too, at most that many (0 to
	// MaxArrivalGroups).
	Groups int
	// Group, when set, counts only the arrivals of that failure group
	// (a Record.Fingerprint).
	Group string
}

// Validate reports the first problem of q, naming the field, wrapped in
// ErrInvalidQuery.
func (q ArrivalsQuery) Validate() error {
	switch {
	case !ValidName(q.DLQ):
		return fmt.Errorf("%w: dlq: %q is not a DLQ name", ErrInvalidQuery, q.DLQ)
	case q.Since.IsZero():
		return fmt.Errorf("%w: since: required", ErrInvalidQuery)
	case q.Step < MinArrivalStep:
		return fmt.Errorf("%w: step: %s is shorter than %s", ErrInvalidQuery, q.Step, MinArrivalStep)
	case q.Buckets < 1 || q.Buckets > MaxArrivalBuckets:
		return fmt.Errorf("%w: buckets: %d is not between 1 and %d", ErrInvalidQuery, q.Buckets, MaxArrivalBuckets)
	case q.Groups < 0 || q.Groups > MaxArrivalGroups:
		return fmt.Errorf("%w: groups: %d is not between 0 and %d", ErrInvalidQuery, q.Groups, MaxArrivalGroups)
	case q.Group != "" && !ValidFingerprint(q.Group):
		return fmt.Errorf("%w: group: %.40q is not a failure fingerprint (32 lower-case hexadecimal digits)", ErrInvalidQuery, q.Group)
	}
	return nil
}

// Until returns the end of q's window (excluded).
func (q ArrivalsQuery) Until() time.Time { return q.Since.Add(time.Duration(q.Buckets) * q.Step) }

// Bucket returns the index of the bucket t falls in, and false when t is
// outside q's window.
func (q ArrivalsQuery) Bucket(t time.Time) (int, bool) {
	if t.Before(q.Since) || !t.Before(q.Until()) {
		return 0, false
	}
	return int(t.Sub(q.Since) / q.Step), true
}

// ArrivalsDay returns the query of the arrivals of dlq in the last 24
// hours by hour, the last bucket the hour now falls in (the hours of
// Group.Hourly).
func ArrivalsDay(dlq string, now time.Time) ArrivalsQuery {
	return ArrivalsQuery{DLQ: dlq, Since: SparklineStart(now), Step: time.Hour, Buckets: SparklineHours}
}

// ArrivalsWeek returns the query of the arrivals of dlq in the last 7
// days by 6 hours (UTC 00, 06, 12, 18), the last bucket the one now
// falls in.
func ArrivalsWeek(dlq string, now time.Time) ArrivalsQuery {
	const step = 6 * time.Hour
	return ArrivalsQuery{DLQ: dlq, Since: now.UTC().Truncate(step).Add(-27 * step), Step: step, Buckets: 28}
}

// Arrivals counts the arrivals of an ArrivalsQuery.
type Arrivals struct {
	// Query is the query answered.
	Query ArrivalsQuery
	// Counts has one count per bucket, oldest first: every arrival of
	// the DLQ in the window.
	Counts []int64
	// Groups are the failure groups with the most arrivals in the
	// window, most first (then by fingerprint), at most Query.Groups.
	Groups []GroupArrivals
}

// GroupArrivals counts the arrivals of one failure group.
type GroupArrivals struct {
	// Fingerprint identifies the group (Record.Fingerprint).
	Fingerprint string
	// Total is the sum of Counts.
	Total int64
	// Counts has one count per bucket, oldest first.
	Counts []int64
}

// NewArrivals returns the empty answer to q, for stores to fill.
func NewArrivals(q ArrivalsQuery) Arrivals {
	return Arrivals{Query: q, Counts: make([]int64, q.Buckets)}
}

// AddGroups keeps the q.Groups groups of byGroup (counts per bucket) with
// the most arrivals in a, most first, then by fingerprint: what stores
// return.
func (a *Arrivals) AddGroups(byGroup map[string][]int64) {
	for fp, counts := range byGroup {
		g := GroupArrivals{Fingerprint: fp, Counts: counts}
		for _, n := range counts {
			g.Total += n
		}
		a.Groups = append(a.Groups, g)
	}
	slices.SortFunc(a.Groups, func(x, y GroupArrivals) int {
		return cmp.Or(cmp.Compare(y.Total, x.Total), cmp.Compare(x.Fingerprint, y.Fingerprint))
	})
	if len(a.Groups) > a.Query.Groups {
		a.Groups = a.Groups[:a.Query.Groups]
	}
}
