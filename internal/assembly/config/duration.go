package config

import (
	"errors"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redrive/redrive/retrypolicy"
)

// parseDuration reads a Go duration or whole days ("30d", "2d12h") with
// retrypolicy.ParseDuration. The error message reads `"5x" is not a
// duration` (or `is out of range`), without retrypolicy's prefix.
func parseDuration(s string) (time.Duration, error) {
	d, err := retrypolicy.ParseDuration(s)
	if err != nil {
		return 0, &FieldError{Msg: policyMsg(err), Err: err}
	}
	return d, nil
}

// decodeNode implements nodeDecoder.
func (d *Duration) decodeNode(dec *decoder, path string, n *yaml.Node) {
	s, ok := dec.scalar(path, n, "a duration")
	if !ok {
		return
	}
	v, err := parseDuration(s)
	if err != nil {
		dec.fail(path, n, errors.Unwrap(err), "%v", err)
		return
	}
	*d = Duration(v)
}

// UnmarshalYAML reads "1s", "5m", "1h30m", "30d".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	dec := newDecoder(nil)
	d.decodeNode(dec, "", n)
	return dec.err()
}

// MarshalYAML writes d the way it is read: "30s", "5m", "30d".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalText reads "1s", "5m", "1h30m", "30d" (for JSON and flags).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes d as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String renders d compactly, with whole days as "d": "30s", "1h30m", "30d".
func (d Duration) String() string { return formatDuration(time.Duration(d)) }

// Duration returns d as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d) }

// formatDuration renders d as retrypolicy.FormatDuration does, with whole
// days written as "d" so that a retention of 30d reads back as 30d.
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d < day {
		return retrypolicy.FormatDuration(d)
	}
	s := strconv.FormatInt(int64(d/day), 10) + "d"
	if rest := d % day; rest != 0 {
		s += retrypolicy.FormatDuration(rest)
	}
	return s
}
