package driver

import (
	"maps"
	"strconv"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
)

// StoryLen is the most headers Story sets.
const StoryLen = 9

// Story returns the x-redrive-* headers a copy of d carries after failure
// o at now (set): for a retry, the attempt number of the next delivery; for
// a dead letter, the reason; and those it no longer carries (del). Both
// backends apply it to the copy's exact headers through Patch.
func Story(d *broker.Delivery, o Outcome, now time.Time) (set map[string]string, del []string) {
	set = make(map[string]string, StoryLen)
	return set, writeStory(set, d, o, now)
}

// writeStory sets in h the x-redrive-* headers of Story and returns the
// names to delete.
func writeStory(h map[string]string, d *broker.Delivery, o Outcome, now time.Time) (del []string) {
	first := d.FirstFailureAt
	if first.IsZero() {
		first = now
	}
	h[broker.HeaderFirstFailureAt] = wire.FormatTime(first)
	h[broker.HeaderLastFailureAt] = wire.FormatTime(now)
	h[broker.HeaderError] = o.Error
	h[broker.HeaderErrorClass] = o.Class
	h[broker.HeaderWorker] = d.Group
	if d.Instance != "" {
		h[broker.HeaderWorkerInstance] = d.Instance
	}
	if d.Source != "" {
		h[broker.HeaderSource] = d.Source
	}
	if d.Topic != "" {
		h[HeaderTopic] = d.Topic
	}
	if o.Retry {
		h[broker.HeaderAttempt] = strconv.Itoa(nextAttempt(d))
		return []string{broker.HeaderReason}
	}
	h[broker.HeaderAttempt] = strconv.Itoa(max(d.Attempt, 1))
	h[broker.HeaderReason] = string(o.Reason)
	return nil
}

// nextAttempt is the attempt number of d's next delivery after a retry.
func nextAttempt(d *broker.Delivery) int { return min(max(d.Attempt, 1), MaxAttempt-1) + 1 }

// Patch returns the exact headers t of a delivery d as a retry or
// dead-letter copy carries them after failure o at now: t's headers in
// their order and types, redrive's story (Story) patched in, without the
// names in drop (the backend's bookkeeping of the delivery).
func Patch(t wire.Table, d *broker.Delivery, o Outcome, now time.Time, drop ...string) wire.Table {
	set, del := Story(d, o, now)
	return t.Patch(set, append(del, drop...)...)
}

// FailureHeaders returns a copy of d's headers with the x-redrive-* story of
// this failure (see Story): the string view of a retry or dead-letter copy.
func FailureHeaders(d *broker.Delivery, o Outcome, now time.Time) map[string]string {
	set, del := Story(d, o, now)
	h := make(map[string]string, len(d.Headers)+len(set))
	for k, v := range d.AllHeaders() { // Headers, or the backend's (HeadersOnDemand)
		h[k] = v
	}
	for _, k := range del {
		delete(h, k)
	}
	maps.Copy(h, set)
	return h
}

// RetryInPlace turns d into its next delivery after failure o (a retry)
// at now, without a copy: what FailureHeaders then ReadStory give, without
// formatting the story and parsing it back. d.Headers must be d's own (a
// backend's fresh delivery); they are changed in place, or built from
// AllHeaders when nil (HeadersOnDemand).
func RetryInPlace(d *broker.Delivery, o Outcome, now time.Time) {
	h := d.Headers
	if h == nil {
		h = make(map[string]string, StoryLen)
		for k, v := range d.AllHeaders() {
			h[k] = v
		}
	}
	first := d.FirstFailureAt
	if first.IsZero() {
		first = now
	}
	for _, k := range writeStory(h, d, o, now) {
		delete(h, k)
	}
	d.Headers = h
	// As ReadStory would read the headers just written: the times at the
	// milliseconds FormatTime keeps, in UTC.
	d.Attempt = nextAttempt(d)
	d.FirstFailureAt = first.UTC().Truncate(time.Millisecond)
	d.LastFailureAt = now.UTC().Truncate(time.Millisecond)
	d.LastError = o.Error
}

// ReadStory fills d's Attempt, failure times and LastError from its
// x-redrive-* headers. Malformed values are ignored (a foreign producer's
// header never fails a delivery).
func ReadStory(d *broker.Delivery) {
	d.Attempt = 1
	// A first delivery has no attempt header: Atoi("") would allocate
	// its error, on every delivery of the consume path.
	if s := d.Header(broker.HeaderAttempt); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			d.Attempt = min(n, MaxAttempt)
		}
	}
	d.FirstFailureAt = wire.ParseTime(d.Header(broker.HeaderFirstFailureAt))
	d.LastFailureAt = wire.ParseTime(d.Header(broker.HeaderLastFailureAt))
	d.LastError = d.Header(broker.HeaderError)
}

// AppHeaders returns h without redrive's own headers (wire.Own): the
// headers the application published.
func AppHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if wire.Own(k) {
			continue
		}
		out[k] = v
	}
	return out
}
