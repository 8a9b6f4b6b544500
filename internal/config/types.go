package config

import "time"

// Config is the whole redrive configuration file. Parse and Load fill in
// the documented defaults (see the field comments) and validate it.
type Config struct {
	Broker    string    `yaml:"broker"` // "rabbitmq" or "kafka"; required
	RabbitMQ  RabbitMQ  `yaml:"rabbitmq"`
	Kafka     Kafka     `yaml:"kafka"`
	Redis     Redis     `yaml:"redis"`
	Postgres  Postgres  `yaml:"postgres"`
	Heartbeat Heartbeat `yaml:"heartbeat"`
	Workers   []Worker  `yaml:"workers"`
	Lag       Lag       `yaml:"lag"`
	Admin     Admin     `yaml:"admin"`
	Exporter  Exporter  `yaml:"exporter"`
}

// Broker names.
const (
	BrokerRabbitMQ = "rabbitmq"
	BrokerKafka    = "kafka"
)

// RabbitMQ configures the RabbitMQ backend. Validated when broker is
// rabbitmq.
type RabbitMQ struct {
	URL       string `yaml:"url"`        // amqp:// or amqps://; default amqp://guest:guest@127.0.0.1:5672/
	Prefix    string `yaml:"prefix"`     // prefix of exchange and tier names; default "redrive"
	QueueType string `yaml:"queue_type"` // classic (default) | quorum
	MaxLength int    `yaml:"max_length"` // x-max-length of group queues; 0 = none
	Delay     Delay  `yaml:"delay"`
	// TLS configures TLS for amqps:// URLs; nil = the system roots and the
	// URL's host.
	TLS *TLS `yaml:"tls"`
}

// Delay configures the RabbitMQ delay tiers: resolution × factor^k for
// k = 0..levels-1. They express delays up to MaxDelay.
type Delay struct {
	Mode       string   `yaml:"mode"`       // route (default: zero consumer hops) | hops (see docs/rabbitmq.md)
	Resolution Duration `yaml:"resolution"` // smallest tier; default 1s; whole milliseconds
	Factor     int      `yaml:"factor"`     // ratio between tiers; default 4, >= 2
	Levels     int      `yaml:"levels"`     // number of tiers; default 8, >= 1
}

// Kafka configures the Kafka backend. Validated when broker is kafka.
type Kafka struct {
	// Brokers are the seed brokers, host:port. An entry may hold several
	// comma-separated addresses (so that brokers: ["${KAFKA_BROKERS}"]
	// works with a list in one variable); empty entries are dropped.
	// Required when broker is kafka.
	Brokers           []string `yaml:"brokers"`
	Partitions        int      `yaml:"partitions"`         // for topics redrive creates; default 3
	ReplicationFactor int      `yaml:"replication_factor"` // default -1 (the broker's default)

	// Client tuning; 0 = the backend's default (see broker/kafka.Config).
	ClientID          string   `yaml:"client_id"`          // default "redrive"
	CommitInterval    Duration `yaml:"commit_interval"`    // how often done offsets are committed; default 1s
	FetchMaxWait      Duration `yaml:"fetch_max_wait"`     // how long a fetch waits for data; default 500ms
	HeartbeatInterval Duration `yaml:"heartbeat_interval"` // group heartbeats; default 3s
	SessionTimeout    Duration `yaml:"session_timeout"`    // group session; default 45s
	RebalanceTimeout  Duration `yaml:"rebalance_timeout"`  // default 60s

	// TLS, when set, connects to the brokers over TLS.
	TLS *TLS `yaml:"tls"`
	// SASL, when set, authenticates to the brokers.
	SASL *SASL `yaml:"sasl"`
}

// TLS configures a TLS client. Files are PEM.
type TLS struct {
	CAFile             string `yaml:"ca_file"`              // CA bundle to verify the server; default the system roots
	CertFile           string `yaml:"cert_file"`            // client certificate (mutual TLS); with key_file
	KeyFile            string `yaml:"key_file"`             // its private key; with cert_file
	ServerName         string `yaml:"server_name"`          // name to verify; default the host dialed
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"` // do not verify the server (tests only)
}

// SASL mechanisms of kafka.sasl.mechanism.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASL configures Kafka SASL authentication.
type SASL struct {
	Mechanism string `yaml:"mechanism"` // PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512; required
	Username  string `yaml:"username"`  // required
	Password  string `yaml:"password"`  // required; secret: masked by Redacted
}

// Redis configures heartbeats.
type Redis struct {
	Addr     string `yaml:"addr"`     // host:port; default 127.0.0.1:6379
	Password string `yaml:"password"` // secret: masked by Redacted
	DB       int    `yaml:"db"`       // default 0
}

// Postgres configures the DLQ store.
type Postgres struct {
	// URL is a postgres:// URL or a key=value DSN; empty = no Postgres
	// store. Its password is masked by Redacted.
	URL string `yaml:"url"`
}

// Heartbeat configures worker heartbeats and their monitor.
type Heartbeat struct {
	Interval           Duration `yaml:"interval"`             // refresh period; default 10s
	TTL                Duration `yaml:"ttl"`                  // key TTL, > interval; default 30s
	MissingAfter       Duration `yaml:"missing_after"`        // CRITICAL after this long without a heartbeat; default 60s
	IdleAfter          Duration `yaml:"idle_after"`           // WARNING (stuck) after this long without a message while lag > 0; default 5m
	ShutdownStuckAfter Duration `yaml:"shutdown_stuck_after"` // WARNING after this long in SHUTTING_DOWN; default 2m
}

// Worker is one worker (consumer group) on one topic.
type Worker struct {
	Name        string    `yaml:"name"`        // group name; required, unique, a legal topic name
	Topic       string    `yaml:"topic"`       // required, a legal topic name
	QueueTTL    *Duration `yaml:"queue_ttl"`   // max age of a waiting message; default 5m; 0 = none
	Concurrency int       `yaml:"concurrency"` // default 1
	Prefetch    int       `yaml:"prefetch"`    // default 2 × concurrency
	// MaxClaims dead-letters a message with reason max_claims once it was
	// delivered this many times without its handler finishing (a handler
	// that kills the process). Default 5; 0 = off.
	MaxClaims *int  `yaml:"max_claims"`
	Retry     Retry `yaml:"retry"`
	DLQ       DLQ   `yaml:"dlq"`
}

// Retry is a worker's retry policy.
type Retry struct {
	MaxRetries   *int     `yaml:"max_retries"`   // default 5 (unset when unlimited); 0 = DLQ on first failure
	Unlimited    bool     `yaml:"unlimited"`     // retry forever; must be explicit
	Backoff      Backoff  `yaml:"backoff"`       // default "1s -> 5s -> 30s -> 5m -> 30m"
	RepeatLast   *bool    `yaml:"repeat_last"`   // reuse the last delay past the schedule; default true
	NonRetriable []string `yaml:"non_retriable"` // error classes sent straight to the DLQ
	MaxElapsed   Duration `yaml:"max_elapsed"`   // give up this long after the first failure; 0 = no limit
	Mode         string   `yaml:"mode"`          // blocking (default) | non_blocking
}

// DLQ is a worker's dead-letter settings.
type DLQ struct {
	Severity  string    `yaml:"severity"`  // critical | warning (default) | info
	Retention Retention `yaml:"retention"` // duration or "forever"; default 30d
}

// Lag configures lag thresholds per topic.
type Lag struct {
	// Thresholds maps a topic to its thresholds.
	Thresholds map[string]Threshold `yaml:"thresholds"`
}

// Threshold is a topic's lag thresholds in records: WARNING above Warning,
// CRITICAL above Critical.
type Threshold struct {
	Warning  int64 `yaml:"warning"`  // >= 0
	Critical int64 `yaml:"critical"` // >= warning
}

// Admin configures the admin HTTP API.
type Admin struct {
	Listen string `yaml:"listen"` // host:port; default 127.0.0.1:8080
	// Token is the bearer token of the API; required when Listen is not a
	// loopback address. Secret: masked by Redacted.
	Token string `yaml:"token"`
	// ViewerToken, when set, logs a viewer into the console: read-only,
	// no replay or discard (the API accepts only Token). Secret: masked
	// by Redacted; must differ from Token.
	ViewerToken string `yaml:"viewer_token"`
}

// Exporter configures the Prometheus exporter.
type Exporter struct {
	Listen string `yaml:"listen"` // host:port; default 127.0.0.1:9477
}

// Duration is a time.Duration read from "1s", "5m", "1h30m" or whole days
// "30d", and written back the same way.
type Duration time.Duration
