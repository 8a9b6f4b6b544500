package broker

import (
	"fmt"
	"slices"
	"time"
)

// Severity is how urgent a worker's dead letters are: it labels the DLQ
// metrics and the keeper's log lines, and critical DLQs are never archived
// automatically.
type Severity string

// Severities, least severe first.
const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// DefaultSeverity is the severity of a DLQ that configures none.
const DefaultSeverity = SeverityWarning

// severityOrder lists the severities, least severe first.
var severityOrder = []Severity{SeverityInfo, SeverityWarning, SeverityCritical}

// Rank orders severities: 1 info, 2 warning, 3 critical; 0 for anything
// else (the empty severity included).
func (s Severity) Rank() int { return slices.Index(severityOrder, s) + 1 }

// Check reports a severity that is neither empty (DefaultSeverity) nor one
// of the three, as a one-line error naming the value (the caller names the
// field).
func (s Severity) Check() error {
	if s != "" && s.Rank() == 0 {
		return fmt.Errorf("%q is not critical, warning or info", string(s))
	}
	return nil
}

// Forever is the DLQOptions.Retention for dead letters that are never
// deleted.
const Forever time.Duration = -1

// DefaultDLQRetention is how long dead letters are kept when
// DLQOptions.Retention is 0: the Kafka DLQ topic's retention and the
// store's archiving age.
const DefaultDLQRetention = 30 * 24 * time.Hour

// DLQOptions configure a worker's dead-letter queue: the subscription's
// options on the broker, and the keeper's and the store's policy of the
// DLQ (dlq.Policy is this type).
type DLQOptions struct {
	// Severity labels metrics and logs: SeverityCritical, SeverityWarning
	// (default) or SeverityInfo. Critical DLQs are never archived
	// automatically.
	Severity Severity
	// Retention is how long dead letters are kept (on Kafka's DLQ topic,
	// and in the store before they are archived); 0 = DefaultDLQRetention;
	// Forever = never deleted.
	Retention time.Duration
}

// WithDefaults returns o with DefaultSeverity and DefaultDLQRetention
// filled in where unset.
func (o DLQOptions) WithDefaults() DLQOptions {
	if o.Severity == "" {
		o.Severity = DefaultSeverity
	}
	if o.Retention == 0 {
		o.Retention = DefaultDLQRetention
	}
	return o
}

// Validate reports the first problem of o, naming the field.
func (o DLQOptions) Validate() error {
	if err := o.Severity.Check(); err != nil {
		return fmt.Errorf("severity %w", err)
	}
	if o.Retention < 0 && o.Retention != Forever {
		return fmt.Errorf("retention %s is negative", o.Retention)
	}
	return nil
}

// Merge returns the options of a DLQ shared by the workers of o and p (a
// Kafka topic's <topic>.dlq): the most severe severity and the longest
// retention (Forever the longest).
func (o DLQOptions) Merge(p DLQOptions) DLQOptions {
	if p.Severity.Rank() > o.Severity.Rank() {
		o.Severity = p.Severity
	}
	if o.Retention != Forever && (p.Retention == Forever || p.Retention > o.Retention) {
		o.Retention = p.Retention
	}
	return o
}
