package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redrive/redrive/retrypolicy"
)

// Backoff is a worker's retry back-off as written in YAML, in one of three
// forms:
//
//	backoff: "1s -> 5s -> 30s -> 5m -> 30m"   # a schedule string
//	backoff: [1s, 5s, 30s]                    # a list of durations
//	backoff: {exponential: {initial: 1s, multiplier: 2, max: 5m, jitter: 0.2}}
//
// The zero value is "not set" (the default schedule applies). At most one of
// Delays and Exponential is set.
type Backoff struct {
	// Delays is an explicit schedule: retry n waits Delays[n-1].
	Delays []time.Duration
	// Exponential is an exponential back-off with cap and jitter.
	Exponential *retrypolicy.Exponential
}

// ScheduleBackoff returns the Backoff of an explicit schedule.
func ScheduleBackoff(delays ...time.Duration) Backoff { return Backoff{Delays: delays} }

// IsZero reports whether b is unset.
func (b Backoff) IsZero() bool { return len(b.Delays) == 0 && b.Exponential == nil }

// Build returns b as a retrypolicy.Backoff: a retrypolicy.Schedule (whose
// last delay repeats when repeatLast is set) or a retrypolicy.Exponential;
// nil when b is unset.
func (b Backoff) Build(repeatLast bool) retrypolicy.Backoff {
	switch {
	case b.Exponential != nil:
		return *b.Exponential
	case len(b.Delays) > 0:
		return retrypolicy.Schedule{Delays: slices.Clone(b.Delays), NoRepeat: !repeatLast}
	}
	return nil
}

// String renders b as it is written: "1s -> 5s -> 30s" or
// "exponential(initial=1s, ...)"; "" when unset.
func (b Backoff) String() string {
	if bb := b.Build(true); bb != nil {
		return bb.String()
	}
	return ""
}

// clone returns a deep copy of b.
func (b Backoff) clone() Backoff {
	out := Backoff{Delays: slices.Clone(b.Delays)}
	if b.Exponential != nil {
		e := *b.Exponential
		out.Exponential = &e
	}
	return out
}

// exponentialYAML is the YAML shape of the exponential form.
type exponentialYAML struct {
	Initial    Duration `yaml:"initial"`    // default 1s
	Multiplier float64  `yaml:"multiplier"` // default 2, >= 1
	Max        Duration `yaml:"max"`        // 0 = no cap
	Jitter     float64  `yaml:"jitter"`     // fraction in [0, 1]; 0 = none
}

// backoffYAML is the YAML shape of the mapping form.
type backoffYAML struct {
	Exponential *exponentialYAML `yaml:"exponential"`
}

// decodeNode implements nodeDecoder.
func (b *Backoff) decodeNode(d *decoder, path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		s, _ := d.scalar(path, n, "a back-off")
		if strings.TrimSpace(s) == "" {
			return
		}
		sch, err := retrypolicy.ParseSchedule(s)
		if err != nil {
			for _, msg := range scheduleMsgs(s, err) { // every bad step, one line each
				d.fail(path, n, err, "%s", msg)
			}
			return
		}
		*b = Backoff{Delays: sch.Delays}
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			d.fail(path, n, nil, "the list of delays is empty")
			return
		}
		var ds []Duration
		before := len(d.errs)
		d.decode(path, n, &ds)
		if len(d.errs) > before {
			return
		}
		delays := make([]time.Duration, len(ds))
		for i, x := range ds {
			delays[i] = time.Duration(x)
		}
		*b = Backoff{Delays: delays}
	case yaml.MappingNode:
		var m backoffYAML
		before := len(d.errs)
		d.decode(path, n, &m)
		if len(d.errs) > before {
			return
		}
		if m.Exponential == nil {
			d.fail(path, n, nil, "expected exponential: {initial, multiplier, max, jitter}")
			return
		}
		e := m.Exponential
		*b = Backoff{Exponential: &retrypolicy.Exponential{
			Initial: time.Duration(e.Initial), Multiplier: e.Multiplier,
			Max: time.Duration(e.Max), Jitter: e.Jitter,
		}}
	default:
		d.fail(path, n, nil, "expected a back-off, found %s", describe(n))
	}
}

// scheduleMsg is the message of a schedule that did not parse, without the
// schedule (the path names it): `step 2: "5x" is not a duration`, or
// `"5x" is not a duration` for a one-step schedule.
func scheduleMsg(s string, err error) string {
	msg := strings.TrimPrefix(policyMsg(err), fmt.Sprintf("schedule %q: ", s))
	if !strings.Contains(s, "->") && !strings.Contains(s, ",") {
		msg = strings.TrimPrefix(msg, "step 1: ")
	}
	return msg
}

// scheduleMsgs is scheduleMsg for each bad step of a ScheduleError.
func scheduleMsgs(s string, err error) []string {
	var se *retrypolicy.ScheduleError
	if !errors.As(err, &se) {
		return []string{scheduleMsg(s, err)}
	}
	out := make([]string, len(se.Steps))
	for i, step := range se.Steps {
		out[i] = step
		if len(se.Steps) == 1 && !strings.Contains(s, "->") && !strings.Contains(s, ",") {
			out[i] = strings.TrimPrefix(strings.TrimPrefix(step, "step 1: "), "step 1 ")
		}
	}
	return out
}

// policyMsg strips retrypolicy's "invalid retry policy: " prefix from err,
// so the message reads `"5x" is not a duration`.
func policyMsg(err error) string {
	msg := err.Error()
	if errors.Is(err, retrypolicy.ErrInvalid) {
		msg = strings.TrimPrefix(msg, retrypolicy.ErrInvalid.Error()+": ")
	}
	return msg
}

// UnmarshalYAML reads the three forms of a back-off.
func (b *Backoff) UnmarshalYAML(n *yaml.Node) error {
	d := newDecoder(nil)
	b.decodeNode(d, "", n)
	return d.err()
}

// MarshalYAML writes a schedule as "1s -> 5s -> 30s" and an exponential
// back-off as its mapping; null when unset.
func (b Backoff) MarshalYAML() (any, error) {
	switch {
	case b.Exponential != nil:
		e := b.Exponential
		return backoffYAML{Exponential: &exponentialYAML{
			Initial: Duration(e.Initial), Multiplier: e.Multiplier,
			Max: Duration(e.Max), Jitter: e.Jitter,
		}}, nil
	case len(b.Delays) > 0:
		parts := make([]string, len(b.Delays))
		for i, x := range b.Delays {
			parts[i] = formatDuration(x)
		}
		return strings.Join(parts, " -> "), nil
	}
	return nil, nil
}
