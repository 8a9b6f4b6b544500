package config

import (
	"time"

	"github.com/redrive/redrive/broker"
)

// The names of the backends that have a section of their own in the
// configuration file (its key is the name): the built-in ones. Any other
// linked backend (a driver.Descriptor) is named by broker: alone.
const (
	BrokerRabbitMQ = "rabbitmq"
	BrokerKafka    = "kafka"
)

// Config is the whole redrive configuration file. Parse and Load fill in
// the documented defaults (see the field comments) and validate it.
type Config struct {
	Broker    string    `yaml:"broker"` // the backend: `rabbitmq`, `kafka`, or another linked one; required
	RabbitMQ  RabbitMQ  `yaml:"rabbitmq"`
	Kafka     Kafka     `yaml:"kafka"`
	Redis     Redis     `yaml:"redis"`
	Postgres  Postgres  `yaml:"postgres"`
	Heartbeat Heartbeat `yaml:"heartbeat"`
	Health    Health    `yaml:"health"`
	// Workers has one entry per worker (consumer group).
	Workers []Worker `yaml:"workers"`
	Lag     Lag      `yaml:"lag"`
	// DLQ configures the dead-letter operations of serve and dev (the
	// keeper, the admin API, the console).
	DLQ      DeadLetters `yaml:"dlq"`
	Admin    Admin       `yaml:"admin"`
	Exporter Exporter    `yaml:"exporter"`
	// Console configures the dead-letter console.
	Console Console `yaml:"console"`
	// Tracing configures the workers' OpenTelemetry spans; off by
	// default.
	Tracing Tracing `yaml:"tracing"`
	// Relay configures redrive relay, which delivers the messages of the
	// workers with an endpoint to it over HTTP.
	Relay Relay `yaml:"relay"`
	// ExactlyOnce configures the outbox relay and the inbox retention
	// that serve runs; off by default.
	ExactlyOnce ExactlyOnce `yaml:"exactly_once"`
}

// RabbitMQ configures the RabbitMQ backend. Validated when broker is
// rabbitmq.
type RabbitMQ struct {
	// URL is an amqp:// or amqps:// URL with a host (checked when broker is
	// rabbitmq), used when urls is empty. It is the one-URL form of urls:
	// set url or urls, not both. Its password is masked by Redacted.
	URL string `yaml:"url"`
	// URLs are the nodes of a RabbitMQ cluster (or load balancers in front
	// of it), each an amqp:// or amqps:// URL with a host: every connection
	// redrive opens (publishers, consumers, the DLQ keeper, the exporter)
	// goes to the first that answers, and to the next one when it is lost
	// (see docs/production.md). Passwords are masked by Redacted.
	URLs []string `yaml:"urls"`
	// Prefix is the prefix of exchange and delay queue names:
	// [a-zA-Z0-9._:-], 1 to 191 characters.
	Prefix string `yaml:"prefix"`
	// QueueType of the group queues, their dead-letter queues and the
	// unroutable queue: `classic` or `quorum` (replicated, at-least-once
	// dead-lettering, max_claims as x-delivery-limit: the production
	// setting on a cluster, see docs/production.md).
	QueueType string `yaml:"queue_type"`
	// MaxLength is the x-max-length of group queues; >= 0, 0 = none.
	MaxLength int `yaml:"max_length"`
	// DeliveryLimit is the x-delivery-limit of quorum group queues whose
	// worker sets no max_claims: past it RabbitMQ dead-letters a message
	// that kept coming back unacknowledged, reason delivery_limit (see
	// docs/rabbitmq.md). Default 20, RabbitMQ 4's own; -1 = none.
	DeliveryLimit int   `yaml:"delivery_limit"`
	Delay         Delay `yaml:"delay"`
	// KeeperBatch is the most dead letters the keeper of serve stores
	// from one DLQ queue in one batch (one PostgreSQL transaction), acked
	// once it is committed; its prefetch is two batches, so that up to
	// 2 × keeper_batch dead letters per DLQ queue are held in memory
	// unstored (mind large payloads). 1 to 10000; default 256.
	KeeperBatch int `yaml:"keeper_batch"`
	// KeeperBatchWait is how long a keeper's batch waits for more dead
	// letters after its first, unless full sooner: without it a backlog is
	// stored about one delivery per transaction. A lone dead letter's
	// entry is delayed by as much. At most 1s; default 5ms (0 = the default).
	KeeperBatchWait Duration `yaml:"keeper_batch_wait"`
	// TLS configures TLS for amqps:// URLs (it requires one); absent = the
	// system roots and the URL's host.
	TLS *TLS `yaml:"tls"`
	// ForeignDLQs are dead-letter queues other applications' messages
	// land in (a queue fed by a dead-letter exchange, such as the shared
	// attune.dlx.queue of services in other languages): the keeper of
	// redrive serve reads them beside the workers' DLQs, with the x-death
	// story of each message, so that their entries are listed, grouped,
	// replayed and discarded like redrive's own (see docs/rabbitmq.md).
	// RabbitMQ only: set with broker: kafka, it is an error.
	ForeignDLQs []ForeignQueue `yaml:"foreign_dlqs"`
}

// Endpoints are the URLs redrive dials, in order: urls, or url.
func (r RabbitMQ) Endpoints() []string {
	if len(r.URLs) > 0 {
		return r.URLs
	}
	return []string{r.URL}
}

// Delay configures the RabbitMQ delay tiers: resolution × factor^k for
// k = 0..levels-1. They express delays up to
// resolution × (factor^levels − 1).
type Delay struct {
	// Mode is `route` (the broker routes a waiting message by the digits
	// of its routing key; zero consumer hops) or `hops` (a consumer moves
	// it tier by tier); see docs/rabbitmq.md.
	Mode string `yaml:"mode"`
	// Resolution is the smallest delay tier; > 0, whole milliseconds.
	Resolution Duration `yaml:"resolution"`
	// Factor is the ratio between tiers; >= 2.
	Factor int `yaml:"factor"`
	// Levels is the number of tiers; >= 1. The largest tier,
	// resolution × factor^(levels−1), must fit RabbitMQ's x-message-ttl
	// (2³²−1 ms).
	Levels int `yaml:"levels"`
	// QueueType of the queues delayed messages wait in: `classic` or
	// `quorum`; unset = rabbitmq.queue_type. Quorum on a cluster: see
	// docs/production.md.
	QueueType string `yaml:"queue_type"`
}

// Kafka configures the Kafka backend. Validated when broker is kafka.
type Kafka struct {
	// Brokers are the seed brokers, host:port. An entry may hold several
	// comma-separated addresses (so that brokers: ["${KAFKA_BROKERS}"]
	// works with a list in one variable); empty entries are dropped.
	// Required when broker is kafka.
	Brokers []string `yaml:"brokers"`
	// Partitions is the partition count of the topics redrive creates;
	// >= 1.
	Partitions int `yaml:"partitions"`
	// ReplicationFactor of the topics redrive creates: -1 = the broker's
	// default, else >= 1.
	ReplicationFactor int `yaml:"replication_factor"`

	// Client tuning: the defaults are the Kafka backend's (see
	// broker/kafka.Config); 0 or unset = the default.

	// ClientID is the client id the brokers see.
	ClientID string `yaml:"client_id"`
	// CommitInterval is how often the offsets of done records are
	// committed (also on revoke and shutdown); >= 0.
	CommitInterval Duration `yaml:"commit_interval"`
	// FetchMaxWait is how long a fetch waits on the broker for data; >= 0.
	FetchMaxWait Duration `yaml:"fetch_max_wait"`
	// HeartbeatInterval is the group heartbeat period; shorter than
	// session_timeout.
	HeartbeatInterval Duration `yaml:"heartbeat_interval"`
	// SessionTimeout is the group session timeout.
	SessionTimeout Duration `yaml:"session_timeout"`
	// RebalanceTimeout is how long a rebalance may take.
	RebalanceTimeout Duration `yaml:"rebalance_timeout"`
	// Share tunes the workers of retry.mode share (Kafka share groups).
	Share KafkaShare `yaml:"share"`

	// TLS, when present, connects to the brokers over TLS ({} = the
	// system roots).
	TLS *TLS `yaml:"tls"`
	// SASL, when present, authenticates to the brokers.
	SASL *SASL `yaml:"sasl"`

	// ForeignDLQs are dead-letter topics other applications write (a
	// Spring Kafka service's "orders.DLT", a Kafka Connect sink's
	// "dlq-jdbc-sink"): the keeper of redrive serve reads them beside the
	// workers' "<topic>.dlq", so that their entries are listed, grouped,
	// replayed and discarded like redrive's own (see docs/kafka.md).
	// Kafka only: set with broker: rabbitmq, it is an error.
	ForeignDLQs []ForeignDLQ `yaml:"foreign_dlqs"`
}

// KafkaShare tunes the workers of retry.mode share: the members each runs
// and the boundary between a back-off held under the record's lock and one
// that goes through the worker's retry topic (see docs/kafka.md).
type KafkaShare struct {
	// Members is how many members of its share group each worker process
	// runs, 0 to 1000; 0 = twice the topic's partitions + 1 (3 to 16).
	Members int `yaml:"members"`
	// Standby is how many members more each worker process runs that poll
	// only in the place of members waiting out back-offs held under the
	// lock, 0 to 1000; 0 = none; ignored with fetch_ahead.
	Standby int `yaml:"standby"`
	// MaxHold is the longest back-off waited out holding the record;
	// longer ones go through <topic>.retry.<worker>; >= 0, 0 = the
	// broker's acquisition lock duration (30s by default).
	MaxHold Duration `yaml:"max_hold"`
	// FetchAhead lets each member fetch ahead while it handles what it
	// took: faster, but what it fetched waits locked while it holds a
	// record, and counts a delivery (towards max_claims) when the process
	// stops or crashes before handling it. Off by default.
	FetchAhead bool `yaml:"fetch_ahead"`
}

// TLS configures a TLS client. Files are PEM; every file named must be
// readable and load.
type TLS struct {
	CAFile             string `yaml:"ca_file"`              // CA bundle to verify the server; empty = the system roots
	CertFile           string `yaml:"cert_file"`            // client certificate (mutual TLS); with key_file, and matching it
	KeyFile            string `yaml:"key_file"`             // its private key; with cert_file
	ServerName         string `yaml:"server_name"`          // name to verify; empty = the host dialed
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
	Mechanism string `yaml:"mechanism"` // `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (case-sensitive); required
	Username  string `yaml:"username"`  // required
	Password  string `yaml:"password"`  // required; secret: masked by Redacted (redrive config check)
}

// Postgres configures the DLQ store.
type Postgres struct {
	// URL is a postgres:// or postgresql:// URL or a key=value DSN; empty =
	// no PostgreSQL store (redrive serve then keeps dead letters in
	// memory). Its password is masked by Redacted.
	URL string `yaml:"url"`
}

// Health configures the health probes of a worker process run with the
// worker package (worker.Run): GET /livez and GET /readyz.
type Health struct {
	// Listen is the host:port the probes are served on, e.g.
	// "0.0.0.0:8081" for Kubernetes probes; empty serves none.
	// worker.Config.Health overrides it.
	Listen string `yaml:"listen"`
}

// Worker is one worker (consumer group) on one topic.
type Worker struct {
	// Name is the group name; required, unique, a legal topic name
	// ([a-zA-Z0-9._-], 1 to 249 characters, not . or ..) since it names
	// queues and topics.
	Name string `yaml:"name"`
	// Topic is the topic the worker reads; required, a legal topic name.
	Topic string `yaml:"topic"`
	// QueueTTL is the longest a message may wait: older, it is
	// dead-lettered with reason expired; an explicit 0 = never; >= 0.
	QueueTTL *Duration `yaml:"queue_ttl"`
	// Concurrency is the number of handler goroutines (RabbitMQ, Kafka
	// share mode) or of partitions handled at once (Kafka); 0 to 10000
	// (beyond, run more instances).
	Concurrency int `yaml:"concurrency"`
	// Prefetch is the number of unacknowledged messages per consumer
	// (RabbitMQ; Kafka share mode: the records each member takes per
	// poll); 0 to 65535, RabbitMQ's largest; default 2 × concurrency (at
	// most 65535).
	Prefetch int `yaml:"prefetch"`
	// MaxClaims dead-letters a message with reason max_claims once it was
	// delivered this many times without its handler finishing (a handler
	// that kills the process); >= 0, 0 = off. Counting claims needs a
	// claim counter (worker.Config.ClaimsRedis or HeartbeatRedis) or, on
	// RabbitMQ, quorum queues (the broker's x-delivery-count). Unset = 5
	// where claims are counted and off elsewhere, silently; a value set
	// where nothing counts claims logs a warning at start (protection
	// off).
	MaxClaims *int  `yaml:"max_claims,omitempty"`
	Retry     Retry `yaml:"retry"`
	DLQ       DLQ   `yaml:"dlq"`
	// KillSwitch stops the worker taking messages while its downstream is
	// down, instead of retrying and dead-lettering every message of the
	// outage; off unless enabled (see the configuration guide).
	KillSwitch KillSwitch `yaml:"kill_switch"`
	// Foreign declares a worker redrive does not run, written in another
	// language: on Kafka a consumer group of that name (a Spring Kafka
	// consumer) that reads topic itself and writes its own dead letters to
	// <topic>.dlq; on RabbitMQ a service consuming the group queue
	// <topic>.<name> that redrive declares. redrive keeps, lists and
	// alerts on its dead letters like its own workers', and worker.Load
	// runs no handler for it. On Kafka a replay of its dead letters goes
	// to topic itself, which every group of the topic receives (it never
	// reads redrive's retry topic <topic>.retry.<name>); the admin API, the
	// console and the audit log say so. On RabbitMQ it goes to its queue,
	// as for every worker. Default false (see docs/operations.md, "Where
	// a replay goes").
	Foreign bool `yaml:"foreign"`
	// Endpoint makes the worker's handler an HTTP endpoint that redrive
	// relay POSTs each message to (docs/relay.md); Go programs (package
	// worker) then leave the worker to the relay. Absent: a Go handler.
	Endpoint *Endpoint `yaml:"endpoint"`
}

// KillSwitch is a worker's kill switch: once at least activation calls
// were counted in the sliding window, a ratio of transient failures at or
// above trip_ratio trips it; the worker then takes no message for
// restart_after, lets one probe through, and closes on its success or
// waits twice as long (up to max_restart_after) on its failure. Permanent
// failures, non-retriable classes, expired messages and poison pills are
// not counted.
type KillSwitch struct {
	Enabled         bool     `yaml:"enabled"`           // default false
	Activation      int      `yaml:"activation"`        // least counted calls in the window before it may trip; default 20, >= 1
	TripRatio       float64  `yaml:"trip_ratio"`        // transient failures / counted calls that trips it; default 0.5, in (0, 1]
	Window          Duration `yaml:"window"`            // sliding window, counted by tenths; default 30s, >= 100ms
	RestartAfter    Duration `yaml:"restart_after"`     // open this long before the first probe; default 30s, > 0
	MaxRestartAfter Duration `yaml:"max_restart_after"` // cap of the doubled timeout; default 5m, >= restart_after
}

// Retry is a worker's retry policy.
type Retry struct {
	// MaxRetries is the number of retries before the DLQ; 0 = DLQ on the
	// first failure; negative is an error (use unlimited). Unset when
	// unlimited.
	MaxRetries *int `yaml:"max_retries"`
	// Unlimited retries forever; it must be explicit and cannot be
	// combined with max_retries.
	Unlimited bool `yaml:"unlimited"`
	// Backoff is the delay before each retry: a schedule, a list or an
	// exponential back-off (see the configuration guide). Steps >= 0;
	// exponential: initial >= 0 (default 1s), multiplier finite >= 1
	// (default 2), max >= 0 (0 = no cap), jitter in [0, 1]. On RabbitMQ
	// the longest delay (jitter included) must fit the delay tiers:
	// resolution × (factor^levels − 1), 18h12m15s with the defaults.
	Backoff Backoff `yaml:"backoff"`
	// RepeatLast reuses the last delay past the end of a schedule (else
	// retries at once).
	RepeatLast *bool `yaml:"repeat_last"`
	// NonRetriable lists error classes sent straight to the DLQ (reason
	// permanent); when given, not empty.
	NonRetriable []string `yaml:"non_retriable"`
	// MaxElapsed stops retrying this long after the first failure (reason
	// max_retries); >= 0, 0 = no limit.
	MaxElapsed Duration `yaml:"max_elapsed"`
	// Mode is `blocking`, `non_blocking` or `share` (Kafka; RabbitMQ
	// never blocks and refuses share); see docs/kafka.md.
	Mode string `yaml:"mode"`
}

// DLQ is a worker's dead-letter settings.
type DLQ struct {
	// Severity is `critical`, `warning` or `info`: the label of the DLQ's
	// metrics and alerts.
	Severity broker.Severity `yaml:"severity"`
	// Retention is how long dead letters are kept live before they are
	// archived: a duration >= 0 or `forever`.
	Retention Retention `yaml:"retention"`
}

// Lag configures lag thresholds per topic.
type Lag struct {
	// Thresholds maps a topic (a legal topic name) to its thresholds.
	Thresholds map[string]Threshold `yaml:"thresholds"`
}

// Threshold is a topic's lag thresholds in records: WARNING above Warning,
// CRITICAL above Critical.
type Threshold struct {
	Warning  int64 `yaml:"warning"`  // records behind; >= 0
	Critical int64 `yaml:"critical"` // records behind; >= warning
}

// DeadLetters configures the dead-letter operations of the daemon.
type DeadLetters struct {
	// MaxPayloadPreview is how many bytes of a dead letter's payload the
	// admin API and the console load and show inline (an entry page, GET
	// /internal/v1/dlq/{dlq}/{id}); the whole payload is downloaded from
	// GET /internal/v1/dlq/{dlq}/{id}/payload, streamed. The store always
	// keeps the whole payload. Bytes, >= 0; default 65536 (64 KiB); 0 =
	// the default.
	MaxPayloadPreview int `yaml:"max_payload_preview"`
	// Replica names this `redrive serve` in the replay-all jobs it runs
	// (a job's owner in the API and the console), e.g. "${POD_NAME}". At
	// most 200 characters, no whitespace or control characters. Empty:
	// hostname-pid-random, new on every start.
	Replica string `yaml:"replica"`
	// JobLease is how long a replica owns a running replay-all job
	// without renewing it; the owner renews it every third of it. With
	// postgres.url, when the owner dies, another replica resumes the job
	// from its last checkpoint once the lease expired (each looks every
	// half lease). A duration of at least 1s; default 30s.
	JobLease Duration `yaml:"job_lease"`
}

// Exporter configures the Prometheus exporter.
type Exporter struct {
	Listen string `yaml:"listen"` // host:port of Prometheus /metrics, /healthz and /readyz
}

// Duration is a time.Duration read from "1s", "5m", "1h30m" or whole days
// "30d", and written back the same way.
type Duration time.Duration
