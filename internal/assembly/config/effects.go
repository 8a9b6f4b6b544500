package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Defaults of the exactly_once section (those of the exactlyonce
// package).
const (
	DefaultInboxRetention     = 7 * 24 * time.Hour
	DefaultOutboxStalledAfter = time.Minute
	DefaultRelayBatch         = 500
	DefaultRelayPollInterval  = time.Second
)

// ExactlyOnce configures what `redrive serve` runs for the inbox and the
// outbox of the exactlyonce package (docs/exactly-once.md): the outbox's
// relay, the inbox's partitions and retention, and their metrics. Off
// unless enabled; a program can run the same itself.
type ExactlyOnce struct {
	// Enabled runs the relay, the maintenance and the metrics in serve.
	// Default false.
	Enabled bool `yaml:"enabled"`
	// URL is the application's database, which holds the inbox and the
	// outbox beside the data the handlers change: a postgres:// or
	// postgresql:// URL or a key=value DSN. Default "": postgres.url (one
	// of them is required when enabled). Its password is masked by
	// Redacted.
	URL string `yaml:"url"`
	// Schema holds the tables (created with them when missing): a
	// lower-case identifier, at most 63 characters. Default "": the
	// connection's search_path (normally public).
	Schema string `yaml:"schema"`
	// InboxRetention is how long the inbox remembers a handled message;
	// whole days are dropped at a time. At least 1d; default 7d.
	InboxRetention Duration `yaml:"inbox_retention"`
	// StalledAfter is the age of the oldest unsent outbox message above
	// which redrive_outbox_stalled is 1 (alert OutboxNotDraining). At
	// least 1s; default 1m.
	StalledAfter Duration `yaml:"stalled_after"`
	// RelayBatch is the most messages the relay reads, publishes and
	// deletes in one round. 1 to 10000; default 500.
	RelayBatch int `yaml:"relay_batch"`
	// PollInterval is how often the relay looks at the outbox when no
	// commit woke it (LISTEN/NOTIFY wakes it within milliseconds). At
	// least 10ms; default 1s.
	PollInterval Duration `yaml:"poll_interval"`
}

// EffectsDatabaseURL is the database of the inbox and the outbox: url, else
// postgres.url.
func (c *Config) EffectsDatabaseURL() string {
	if c.ExactlyOnce.URL != "" {
		return c.ExactlyOnce.URL
	}
	return c.Postgres.URL
}

// applyDefaults fills in the section's defaults.
func (e *ExactlyOnce) applyDefaults() {
	setDefault(&e.InboxRetention, Duration(DefaultInboxRetention))
	setDefault(&e.StalledAfter, Duration(DefaultOutboxStalledAfter))
	setDefault(&e.RelayBatch, DefaultRelayBatch)
	setDefault(&e.PollInterval, Duration(DefaultRelayPollInterval))
}

var effectsSchema = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// validate checks the section (also when disabled, so that turning it on
// cannot fail later), and that enabling it names a database.
func (e ExactlyOnce) validate(p *problems, postgresURL string) {
	if strings.Contains(e.URL, "://") {
		checkURL(p, "exactly_once.url", e.URL, "postgres", "postgresql")
	}
	if e.Enabled && e.URL == "" && postgresURL == "" {
		p.add("exactly_once.url", "required when exactly_once.enabled (or set postgres.url): the application's database holds the inbox and the outbox")
	}
	if e.Schema != "" && !effectsSchema.MatchString(e.Schema) {
		p.add("exactly_once.schema", fmt.Sprintf("%.70q is not a lower-case identifier (a-z 0-9 _, at most 63, not starting with a digit)", e.Schema))
	}
	if time.Duration(e.InboxRetention) < 24*time.Hour {
		p.add("exactly_once.inbox_retention", fmt.Sprintf("%s is shorter than 1d", time.Duration(e.InboxRetention)))
	}
	if time.Duration(e.StalledAfter) < time.Second {
		p.add("exactly_once.stalled_after", fmt.Sprintf("%s is shorter than 1s", time.Duration(e.StalledAfter)))
	}
	if e.RelayBatch < 1 || e.RelayBatch > 10000 {
		p.add("exactly_once.relay_batch", fmt.Sprintf("%d is not in 1..10000", e.RelayBatch))
	}
	if time.Duration(e.PollInterval) < 10*time.Millisecond {
		p.add("exactly_once.poll_interval", fmt.Sprintf("%s is shorter than 10ms", time.Duration(e.PollInterval)))
	}
}
