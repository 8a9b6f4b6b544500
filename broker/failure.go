package broker

import (
	"maps"
	"strconv"
	"strings"
	"time"
)

// MaxErrorLen bounds the error text carried in HeaderError.
const MaxErrorLen = 1024

// MaxAttempt caps the attempt number a delivery carries: larger
// x-redrive-attempt values that parse as an int read as MaxAttempt, and a
// retry of MaxAttempt stays at MaxAttempt instead of overflowing.
const MaxAttempt = 1 << 30

// Outcome is what happens to a delivery whose handler failed.
type Outcome struct {
	// Retry is true when the message is tried again after Delay; false when
	// it is dead-lettered with Reason.
	Retry  bool
	Delay  time.Duration
	Reason string
	// Class and Error describe the failure.
	Class string
	Error string
}

// Decide applies sub's policy to a failure of d. Backends call it so that
// both brokers decide alike.
func Decide(sub Subscription, d *Delivery, err error, now time.Time) Outcome {
	o := Outcome{Class: ErrorClass(err), Error: truncate(ErrorMessage(err), MaxErrorLen)}
	if IsPermanent(err) {
		o.Reason = ReasonPermanent
		return o
	}
	var elapsed time.Duration
	if !d.FirstFailureAt.IsZero() {
		elapsed = now.Sub(d.FirstFailureAt)
	}
	v := sub.Policy.Next(max(d.Attempt, 1), o.Class, elapsed)
	if !v.Retry {
		o.Reason = v.Reason
		return o
	}
	o.Retry, o.Delay = true, v.Delay
	if ra, ok := RetryDelay(err); ok {
		o.Delay = max(ra, 0)
	}
	return o
}

// ErrorMessage is err's text without redrive's own Permanent and
// RetryAfter wrappers: what the handler said.
func ErrorMessage(err error) string {
	for {
		switch e := err.(type) {
		case *PermanentError:
			err = e.Err
			continue
		case *RetryAfterError:
			err = e.Err
			continue
		case *RequeueError:
			err = e.Err
			continue
		}
		return err.Error()
	}
}

// FailureHeaders returns a copy of d's headers with the x-redrive-* story of
// this failure (see Story): the string view of a retry or dead-letter copy.
func FailureHeaders(d *Delivery, o Outcome, now time.Time) map[string]string {
	set, del := Story(d, o, now)
	h := make(map[string]string, len(d.Headers)+len(set))
	maps.Copy(h, d.Headers)
	for _, k := range del {
		delete(h, k)
	}
	maps.Copy(h, set)
	return h
}

// Story returns the x-redrive-* headers a copy of d carries after failure
// o at now (set): for a retry, the attempt number of the next delivery; for
// a dead letter, the reason; and those it no longer carries (del). Both
// backends apply it to the copy's exact headers (wire.Table.Patch).
func Story(d *Delivery, o Outcome, now time.Time) (set map[string]string, del []string) {
	set = make(map[string]string, 9)
	first := d.FirstFailureAt
	if first.IsZero() {
		first = now
	}
	set[HeaderFirstFailureAt] = FormatTime(first)
	set[HeaderLastFailureAt] = FormatTime(now)
	set[HeaderError] = o.Error
	set[HeaderErrorClass] = o.Class
	set[HeaderWorker] = d.Group
	if d.Instance != "" {
		set[HeaderWorkerInstance] = d.Instance
	}
	if d.Source != "" {
		set[HeaderSource] = d.Source
	}
	if d.Topic != "" {
		set[HeaderTopic] = d.Topic
	}
	if o.Retry {
		set[HeaderAttempt] = strconv.Itoa(min(max(d.Attempt, 1), MaxAttempt-1) + 1)
		del = []string{HeaderReason}
	} else {
		set[HeaderAttempt] = strconv.Itoa(max(d.Attempt, 1))
		set[HeaderReason] = o.Reason
	}
	return set, del
}

// ReadStory fills d's Attempt, failure times and LastError from its
// x-redrive-* headers. Malformed values are ignored (a foreign producer's
// header never fails a delivery).
func ReadStory(d *Delivery) {
	d.Attempt = 1
	if n, err := strconv.Atoi(d.Headers[HeaderAttempt]); err == nil && n > 0 {
		d.Attempt = min(n, MaxAttempt)
	}
	d.FirstFailureAt = ParseTime(d.Headers[HeaderFirstFailureAt])
	d.LastFailureAt = ParseTime(d.Headers[HeaderLastFailureAt])
	d.LastError = d.Headers[HeaderError]
}

// AppHeaders returns h without redrive's own headers (x-redrive-* and
// x-remaining-delay): the headers the application published.
func AppHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if strings.HasPrefix(k, HeaderPrefix) || k == HeaderRemainingDelay {
			continue
		}
		out[k] = v
	}
	return out
}

// FormatTime renders t as RFC 3339 in UTC with milliseconds.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// ParseTime parses an RFC 3339 time; the zero time when s is not one.
func ParseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
