package config

import (
	"strings"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq/access"
)

// MinTokenLen is the shortest admin.token and admin.viewer_token accepted.
const MinTokenLen = access.MinTokenLen

// MinSessionSecretLen is the shortest admin.session_secret accepted
// (console.MinSessionSecret).
const MinSessionSecretLen = 32

// Defaults filled in by ApplyDefaults and Worker.WithDefaults
// (docs/configuration.md lists each with its key).
const (
	DefaultRabbitMQURL     = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultPrefix          = "redrive"
	DefaultQueueType       = "classic"
	DefaultDelayMode       = "route"
	DefaultDelayResolution = time.Second
	DefaultDelayFactor     = 4
	DefaultDelayLevels     = 8
	// The RabbitMQ keeper's batch: broker/rabbit's DefaultKeeperBatch and
	// DefaultKeeperBatchWait (a test keeps them equal).
	DefaultKeeperBatch     = 256
	DefaultKeeperBatchWait = 5 * time.Millisecond
	// DefaultDeliveryLimit is rabbitmq.delivery_limit's default
	// (broker/rabbit's DefaultDeliveryLimit).
	DefaultDeliveryLimit = 20

	DefaultKafkaPartitions        = 3
	DefaultKafkaReplicationFactor = -1
	// The Kafka client's settings: broker/kafka's defaults (a test keeps
	// them equal), filled in so that `redrive config check` shows what
	// runs.
	DefaultKafkaClientID          = "redrive"
	DefaultKafkaCommitInterval    = time.Second
	DefaultKafkaFetchMaxWait      = 500 * time.Millisecond
	DefaultKafkaHeartbeatInterval = 3 * time.Second
	DefaultKafkaSessionTimeout    = 45 * time.Second
	DefaultKafkaRebalanceTimeout  = 60 * time.Second

	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultAdminListen = "127.0.0.1:8080"
	// DefaultMaxPayloadPreview is dlq.max_payload_preview's default: 64 KiB.
	DefaultMaxPayloadPreview = 64 << 10
	// DefaultJobLease is dlq.job_lease's default (jobs.DefaultLease).
	DefaultJobLease       = 30 * time.Second
	DefaultExporterListen = "127.0.0.1:9477"

	DefaultHeartbeatInterval      = 10 * time.Second
	DefaultHeartbeatTTL           = 30 * time.Second
	DefaultHeartbeatMissingAfter  = 60 * time.Second
	DefaultHeartbeatIdleAfter     = 5 * time.Minute
	DefaultHeartbeatShutdownStuck = 2 * time.Minute
	DefaultHeartbeatMaxInstances  = 10_000

	DefaultQueueTTL     = 5 * time.Minute
	DefaultConcurrency  = 1
	DefaultMaxRetries   = 5
	DefaultBackoff      = "1s -> 5s -> 30s -> 5m -> 30m"
	DefaultRetryMode    = string(broker.Blocking)
	DefaultDLQRetention = 30 * 24 * time.Hour
)

// defaultDelays is DefaultBackoff parsed.
var defaultDelays = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}

// ApplyDefaults fills every unset field of c with its documented default.
// Zero values count as unset, except where the field comment gives 0 a
// meaning (queue_ttl: 0 = none). Kafka broker entries are split on commas.
func (c *Config) ApplyDefaults() {
	r := &c.RabbitMQ
	if len(r.URLs) == 0 {
		setDefault(&r.URL, DefaultRabbitMQURL)
	}
	setDefault(&r.Prefix, DefaultPrefix)
	setDefault(&r.QueueType, DefaultQueueType)
	setDefault(&r.Delay.Mode, DefaultDelayMode)
	setDefault(&r.Delay.Resolution, Duration(DefaultDelayResolution))
	setDefault(&r.Delay.Factor, DefaultDelayFactor)
	setDefault(&r.Delay.Levels, DefaultDelayLevels)
	setDefault(&r.Delay.QueueType, r.QueueType)
	setDefault(&r.KeeperBatch, DefaultKeeperBatch)
	setDefault(&r.DeliveryLimit, DefaultDeliveryLimit)
	setDefault(&r.KeeperBatchWait, Duration(DefaultKeeperBatchWait))
	for i := range r.ForeignDLQs {
		r.ForeignDLQs[i] = r.ForeignDLQs[i].WithDefaults()
	}

	c.Kafka.Brokers = splitBrokers(c.Kafka.Brokers)
	setDefault(&c.Kafka.Partitions, DefaultKafkaPartitions)
	setDefault(&c.Kafka.ReplicationFactor, DefaultKafkaReplicationFactor)
	k := &c.Kafka
	setDefault(&k.ClientID, DefaultKafkaClientID)
	setDefault(&k.CommitInterval, Duration(DefaultKafkaCommitInterval))
	setDefault(&k.FetchMaxWait, Duration(DefaultKafkaFetchMaxWait))
	setDefault(&k.HeartbeatInterval, Duration(DefaultKafkaHeartbeatInterval))
	setDefault(&k.SessionTimeout, Duration(DefaultKafkaSessionTimeout))
	setDefault(&k.RebalanceTimeout, Duration(DefaultKafkaRebalanceTimeout))
	for i := range k.ForeignDLQs {
		k.ForeignDLQs[i] = k.ForeignDLQs[i].WithDefaults()
	}

	setDefault(&c.Redis.Addr, DefaultRedisAddr)
	setDefault(&c.Admin.Listen, DefaultAdminListen)
	if pa := c.Admin.ProxyAuth; pa != nil {
		setDefault(&pa.UserHeader, access.DefaultUserHeader)
		setDefault(&pa.Role, string(access.Viewer))
	}
	setDefault(&c.DLQ.MaxPayloadPreview, DefaultMaxPayloadPreview)
	setDefault(&c.DLQ.JobLease, Duration(DefaultJobLease))
	setDefault(&c.Exporter.Listen, DefaultExporterListen)
	setDefault(&c.Relay.Listen, DefaultRelayListen)
	c.Tracing.applyDefaults()
	c.ExactlyOnce.applyDefaults()

	h := &c.Heartbeat
	setDefault(&h.Interval, Duration(DefaultHeartbeatInterval))
	setDefault(&h.TTL, Duration(DefaultHeartbeatTTL))
	setDefault(&h.MissingAfter, Duration(DefaultHeartbeatMissingAfter))
	setDefault(&h.IdleAfter, Duration(DefaultHeartbeatIdleAfter))
	setDefault(&h.ShutdownStuckAfter, Duration(DefaultHeartbeatShutdownStuck))
	setDefault(&h.MaxInstances, DefaultHeartbeatMaxInstances)

	for i := range c.Workers {
		c.Workers[i] = c.Workers[i].WithDefaults()
	}
}

// WithDefaults returns w with every unset field set to its documented
// default: queue_ttl 5m, concurrency 1, prefetch 2 × concurrency (max_claims
// stays unset: its default depends on the claim counter, see
// Worker.Subscription), retry
// max_retries 5 (unless unlimited), backoff "1s -> 5s -> 30s -> 5m -> 30m",
// repeat_last true, mode blocking, an exponential back-off's initial 1s and
// multiplier 2, dlq severity warning and retention 30d, and the kill switch's
// (enabled or not) activation 20, trip_ratio 0.5, window 30s, restart_after 30s
// and max_restart_after 5m, and an endpoint's (see Endpoint.WithDefaults).
func (w Worker) WithDefaults() Worker {
	if w.QueueTTL == nil {
		ttl := Duration(DefaultQueueTTL)
		w.QueueTTL = &ttl
	}
	setDefault(&w.Concurrency, DefaultConcurrency)
	if w.Prefetch == 0 && w.Concurrency > 0 && w.Concurrency <= broker.MaxConcurrency {
		w.Prefetch = min(2*w.Concurrency, broker.MaxPrefetch)
	}
	r := &w.Retry
	if r.MaxRetries == nil && !r.Unlimited {
		n := DefaultMaxRetries
		r.MaxRetries = &n
	}
	if r.Backoff.IsZero() {
		r.Backoff = Backoff{Delays: append([]time.Duration(nil), defaultDelays...)}
	}
	if e := r.Backoff.Exponential; e != nil && (e.Initial == 0 || e.Multiplier == 0) {
		ee := *e
		setDefault(&ee.Initial, time.Second)
		setDefault(&ee.Multiplier, 2)
		r.Backoff.Exponential = &ee
	}
	if r.RepeatLast == nil {
		t := true
		r.RepeatLast = &t
	}
	setDefault(&r.Mode, DefaultRetryMode)
	setDefault(&w.DLQ.Severity, broker.DefaultSeverity)
	k, d := &w.KillSwitch, w.KillSwitch.Config().WithDefaults()
	setDefault(&k.Activation, d.Activation)
	setDefault(&k.TripRatio, d.TripRatio)
	setDefault(&k.Window, Duration(d.Window))
	setDefault(&k.RestartAfter, Duration(d.RestartAfter))
	setDefault(&k.MaxRestartAfter, Duration(d.MaxRestartAfter))
	if w.DLQ.Retention.IsZero() {
		w.DLQ.Retention = RetainFor(DefaultDLQRetention)
	}
	if w.Endpoint != nil {
		e := w.Endpoint.WithDefaults()
		w.Endpoint = &e
	}
	return w
}

// setDefault sets *p to def when it is the zero value.
func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// splitBrokers splits comma-separated entries and drops empty ones.
func splitBrokers(in []string) []string {
	var out []string
	for _, e := range in {
		for _, b := range strings.Split(e, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}
