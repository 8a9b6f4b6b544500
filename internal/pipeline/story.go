package pipeline

import (
	"maps"
	"strconv"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
)

// Story returns the x-redrive-* headers a copy of d carries after failure
// o at now (set): for a retry, the attempt number of the next delivery; for
// a dead letter, the reason; and those it no longer carries (del). Both
// backends apply it to the copy's exact headers through Patch.
func Story(d *broker.Delivery, o Outcome, now time.Time) (set map[string]string, del []string) {
	set = make(map[string]string, 9)
	first := d.FirstFailureAt
	if first.IsZero() {
		first = now
	}
	set[broker.HeaderFirstFailureAt] = wire.FormatTime(first)
	set[broker.HeaderLastFailureAt] = wire.FormatTime(now)
	set[broker.HeaderError] = o.Error
	set[broker.HeaderErrorClass] = o.Class
	set[broker.HeaderWorker] = d.Group
	if d.Instance != "" {
		set[broker.HeaderWorkerInstance] = d.Instance
	}
	if d.Source != "" {
		set[broker.HeaderSource] = d.Source
	}
	if d.Topic != "" {
		set[broker.HeaderTopic] = d.Topic
	}
	if o.Retry {
		set[broker.HeaderAttempt] = strconv.Itoa(min(max(d.Attempt, 1), MaxAttempt-1) + 1)
		del = []string{broker.HeaderReason}
	} else {
		set[broker.HeaderAttempt] = strconv.Itoa(max(d.Attempt, 1))
		set[broker.HeaderReason] = string(o.Reason)
	}
	return set, del
}

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
