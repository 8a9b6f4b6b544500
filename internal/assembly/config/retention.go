package config

import (
	"errors"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redrive/redrive/broker"
)

// Retention is how long dead letters are kept: a duration ("30d") or the
// word "forever". The zero value is "not set" (the default applies).
type Retention struct {
	// Forever keeps dead letters until an operator deletes them.
	Forever bool
	// Duration is the retention when Forever is false.
	Duration time.Duration
}

// RetainForever is the Retention "forever".
var RetainForever = Retention{Forever: true}

// RetainFor returns the Retention d.
func RetainFor(d time.Duration) Retention { return Retention{Duration: d} }

// IsZero reports whether r is unset.
func (r Retention) IsZero() bool { return !r.Forever && r.Duration == 0 }

// Value returns r as broker.DLQOptions.Retention wants it: broker.Forever
// for "forever", else the duration.
func (r Retention) Value() time.Duration {
	if r.Forever {
		return broker.Forever
	}
	return r.Duration
}

// String renders r as it is written: "forever" or a duration.
func (r Retention) String() string {
	if r.Forever {
		return "forever"
	}
	return formatDuration(r.Duration)
}

// decodeNode implements nodeDecoder.
func (r *Retention) decodeNode(d *decoder, path string, n *yaml.Node) {
	s, ok := d.scalar(path, n, `a duration or "forever"`)
	if !ok {
		return
	}
	if strings.EqualFold(strings.TrimSpace(s), "forever") {
		*r = RetainForever
		return
	}
	v, err := parseDuration(s)
	if err != nil {
		d.fail(path, n, errors.Unwrap(err), "%s", strings.Replace(err.Error(), "not a duration", `not a duration or "forever"`, 1))
		return
	}
	*r = Retention{Duration: v}
}

// UnmarshalYAML reads a duration or "forever".
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	d := newDecoder(nil)
	r.decodeNode(d, "", n)
	return d.err()
}

// MarshalYAML writes r as String does; null when unset.
func (r Retention) MarshalYAML() (any, error) {
	if r.IsZero() {
		return nil, nil
	}
	return r.String(), nil
}
