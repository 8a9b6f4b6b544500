package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redrive/redrive/broker/driver"
)

// ErrInvalidConfig is wrapped by the Validate errors of this package.
var ErrInvalidConfig = errors.New("heartbeat: invalid config")

// Defaults of PublisherConfig and MonitorConfig (the design's values).
const (
	DefaultInterval           = 10 * time.Second
	DefaultTTL                = 30 * time.Second
	DefaultShutdownTTL        = 60 * time.Second
	DefaultMissingAfter       = 60 * time.Second
	DefaultIdleAfter          = 5 * time.Minute
	DefaultShutdownStuckAfter = 2 * time.Minute
	DefaultForgetAfter        = 24 * time.Hour
	// DefaultMaxInstances bounds the instances one check reads (and so
	// the rows of `redrive workers`, /healthz and the console, and the
	// series of /metrics).
	DefaultMaxInstances = 10_000
	// DefaultScanKeysPerCheck bounds the keys one check's discovery SCAN
	// examines (two round trips of 5,000): a pass over a Redis of N keys
	// spans N/10,000 checks, each of bounded cost.
	DefaultScanKeysPerCheck = 10_000
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Type is the worker name (its consumer group). Required; must not
	// contain ':'.
	Type string
	// Instance identifies this process; default "hostname-pid".
	Instance string
	// Interval between beats; default 10 s.
	Interval time.Duration
	// TTL of a RUNNING heartbeat key; default 30 s; must exceed Interval.
	TTL time.Duration
	// ShutdownTTL of the SHUTTING_DOWN key; default 60 s.
	ShutdownTTL time.Duration
	// ForgetAfter: registry entries older than this are pruned; default 24 h.
	ForgetAfter time.Duration
	// MissingAfter is the monitor's heartbeat.missing_after: a publisher
	// whose Instance is this process's default (hostname-pid) retires the
	// instances of its type that ran on the same host, whose process is
	// gone and whose last beat is older than this (MISSING); default 60 s.
	MissingAfter time.Duration
	// Prefix goes in front of every key (see Keys); default "".
	Prefix string
	// Lag, when set, is asked for the consumer lag before every beat
	// (bounded by the beat's deadline); the beat reports its answer, or
	// the last one when it fails (logged once per failure streak).
	// SetLag is the other way to report lag.
	Lag func(ctx context.Context) (int64, error)
	// Endpoint, when set, is asked before every beat for what the beat
	// says about the HTTP endpoint the worker delivers to (redrive relay);
	// nil answers leave it out. Default nil: no endpoint.
	Endpoint func() *Endpoint
	// Logger receives the outage messages; default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with the documented defaults filled in.
func (c PublisherConfig) WithDefaults() PublisherConfig {
	if c.Instance == "" {
		c.Instance = DefaultInstance()
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.TTL <= 0 {
		c.TTL = max(DefaultTTL, 3*c.Interval)
	}
	if c.ShutdownTTL <= 0 {
		c.ShutdownTTL = DefaultShutdownTTL
	}
	if c.ForgetAfter <= 0 {
		c.ForgetAfter = DefaultForgetAfter
	}
	if c.MissingAfter <= 0 {
		c.MissingAfter = DefaultMissingAfter
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c PublisherConfig) Validate() error {
	switch {
	case c.Type == "":
		return fmt.Errorf("%w: type is empty", ErrInvalidConfig)
	case strings.Contains(c.Type, ":"):
		return fmt.Errorf("%w: type %q contains ':'", ErrInvalidConfig, c.Type)
	case c.Interval < 0:
		return fmt.Errorf("%w: interval %s is negative", ErrInvalidConfig, c.Interval)
	case c.TTL < 0:
		return fmt.Errorf("%w: ttl %s is negative", ErrInvalidConfig, c.TTL)
	case c.TTL > 0 && c.Interval > 0 && c.TTL <= c.Interval:
		return fmt.Errorf("%w: ttl %s must exceed interval %s", ErrInvalidConfig, c.TTL, c.Interval)
	case c.ShutdownTTL < 0:
		return fmt.Errorf("%w: shutdown ttl %s is negative", ErrInvalidConfig, c.ShutdownTTL)
	case c.ForgetAfter < 0:
		return fmt.Errorf("%w: forget after %s is negative", ErrInvalidConfig, c.ForgetAfter)
	case c.MissingAfter < 0:
		return fmt.Errorf("%w: missing after %s is negative", ErrInvalidConfig, c.MissingAfter)
	}
	return nil
}

// DefaultInstance returns "hostname-pid" ("unknown-pid" without a host
// name), as driver.DefaultInstance.
func DefaultInstance() string { return driver.DefaultInstance() }

// LagThreshold is the lag, in records, above which a worker reads WARNING
// or CRITICAL. A zero level is off.
type LagThreshold struct {
	Warning  int64
	Critical int64
}

// MonitorConfig configures a Monitor. Durations are the design's
// thresholds; tests shorten them.
type MonitorConfig struct {
	// Prefix goes in front of every key (see Keys); default "".
	Prefix string
	// MissingAfter: CRITICAL after this long without a beat; default 60 s.
	MissingAfter time.Duration
	// IdleAfter: WARNING (stuck) after this long without a message while
	// lag > 0; default 5 min.
	IdleAfter time.Duration
	// ShutdownStuckAfter: WARNING after this long in SHUTTING_DOWN;
	// default 2 min.
	ShutdownStuckAfter time.Duration
	// ForgetAfter: instances whose last beat is older are not reported;
	// default 24 h.
	ForgetAfter time.Duration
	// LagThresholds maps a worker type to the thresholds of its topic.
	// Types without an entry are not graded on lag.
	LagThresholds map[string]LagThreshold
	// Workers are the configured worker types: read first, so that
	// instances beyond MaxInstances are never theirs. Default none.
	Workers []string
	// MaxInstances bounds the instances one check reads; the others are
	// left out and counted (Monitor.Dropped). Default
	// DefaultMaxInstances (10,000).
	MaxInstances int
	// ScanKeysPerCheck bounds the keys one check's discovery of heartbeat
	// keys (SCAN) examines: in a Redis holding more keys, a pass spans
	// several checks, and an instance found by its key alone is recorded
	// (workers:{type}:discovered) so that later checks read it without
	// scanning. Default DefaultScanKeysPerCheck (10,000); a one-shot
	// reader (redrive workers) sets it high enough for a whole pass.
	ScanKeysPerCheck int
	// Logger receives the failures to record discovered instances, once
	// per outage. Default slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with the documented defaults filled in.
func (c MonitorConfig) WithDefaults() MonitorConfig {
	if c.MissingAfter <= 0 {
		c.MissingAfter = DefaultMissingAfter
	}
	if c.IdleAfter <= 0 {
		c.IdleAfter = DefaultIdleAfter
	}
	if c.ShutdownStuckAfter <= 0 {
		c.ShutdownStuckAfter = DefaultShutdownStuckAfter
	}
	if c.ForgetAfter <= 0 {
		c.ForgetAfter = DefaultForgetAfter
	}
	if c.MaxInstances <= 0 {
		c.MaxInstances = DefaultMaxInstances
	}
	if c.ScanKeysPerCheck <= 0 {
		c.ScanKeysPerCheck = DefaultScanKeysPerCheck
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c MonitorConfig) Validate() error {
	switch {
	case c.MissingAfter < 0:
		return fmt.Errorf("%w: missing after %s is negative", ErrInvalidConfig, c.MissingAfter)
	case c.IdleAfter < 0:
		return fmt.Errorf("%w: idle after %s is negative", ErrInvalidConfig, c.IdleAfter)
	case c.ShutdownStuckAfter < 0:
		return fmt.Errorf("%w: shutdown stuck after %s is negative", ErrInvalidConfig, c.ShutdownStuckAfter)
	case c.ForgetAfter < 0:
		return fmt.Errorf("%w: forget after %s is negative", ErrInvalidConfig, c.ForgetAfter)
	case c.ForgetAfter > 0 && c.MissingAfter > 0 && c.ForgetAfter <= c.MissingAfter:
		return fmt.Errorf("%w: forget after %s must exceed missing after %s", ErrInvalidConfig, c.ForgetAfter, c.MissingAfter)
	case c.MaxInstances < 0:
		return fmt.Errorf("%w: max instances %d is negative", ErrInvalidConfig, c.MaxInstances)
	case c.ScanKeysPerCheck < 0:
		return fmt.Errorf("%w: scan keys per check %d is negative", ErrInvalidConfig, c.ScanKeysPerCheck)
	}
	for typ, t := range c.LagThresholds {
		switch {
		case t.Warning < 0 || t.Critical < 0:
			return fmt.Errorf("%w: lag threshold of %q is negative", ErrInvalidConfig, typ)
		case t.Warning > 0 && t.Critical > 0 && t.Critical < t.Warning:
			return fmt.Errorf("%w: lag threshold of %q: critical %d is below warning %d", ErrInvalidConfig, typ, t.Critical, t.Warning)
		}
	}
	return nil
}
