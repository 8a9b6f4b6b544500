package rabbit

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/redact"
)

// ErrInvalidConfig is wrapped by Config.Validate errors.
var ErrInvalidConfig = driver.NewError("rabbit: invalid config", driver.ErrInvalidConfig)

// Defaults of Config.
const (
	DefaultURL            = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultPrefix         = "redrive"
	DefaultResolution     = time.Second
	DefaultFactor         = 4
	DefaultLevels         = 8
	DefaultMaxMessageSize = 128 << 20 // RabbitMQ's default max_message_size
	DefaultDialTimeout    = 10 * time.Second
	// DefaultKeeperBatch and DefaultKeeperBatchWait are the keeper's
	// batch defaults (Config.KeeperBatch, Config.KeeperBatchWait).
	DefaultKeeperBatch     = 256
	DefaultKeeperBatchWait = 5 * time.Millisecond
	// MaxKeeperBatch and MaxKeeperBatchWait bound them.
	MaxKeeperBatch = 10_000
	// DefaultDeliveryLimit is Config.DeliveryLimit's default: RabbitMQ
	// 4's own default for quorum queues, declared explicitly so that 3.x
	// and 4.x nodes behave alike.
	DefaultDeliveryLimit = 20
	// NoDeliveryLimit, as Config.DeliveryLimit, declares quorum group
	// queues without a delivery limit.
	NoDeliveryLimit    = -1
	MaxKeeperBatchWait = time.Second
)

// Delay modes.
const (
	DelayHops  = "hops"
	DelayRoute = "route"
)

// Queue types.
const (
	Classic = "classic"
	Quorum  = "quorum"
)

// Config configures a Broker. The zero value works against a local broker
// with the documented defaults.
type Config struct {
	// URL of the broker; default DefaultURL when URLs is empty too.
	// amqps:// uses TLS. The one-URL form of URLs: set one of them.
	URL string
	// URLs are the nodes of a cluster (or load balancers): redrive
	// connects to the first that answers and fails over to the next when a
	// connection is lost (see Dialer).
	URLs []string
	// TLS overrides the TLS settings derived from amqps:// URLs.
	TLS *tls.Config
	// Prefix names redrive's exchanges and delay queues; default "redrive".
	Prefix string
	// QueueType of the group queues, their dead-letter queues and the
	// unroutable queue: Classic (default) or Quorum (replicated;
	// at-least-once dead-lettering with x-overflow reject-publish;
	// x-delivery-limit = the subscription's MaxClaims, else DeliveryLimit).
	QueueType string
	// DeliveryLimit is the x-delivery-limit of quorum group queues whose
	// subscription sets no MaxClaims: how many times RabbitMQ delivers a
	// message that keeps coming back unacknowledged (its worker process
	// died or lost its connection while holding it; a foreign consumer's
	// nack) before it dead-letters it to the group's DLQ with x-death
	// reason delivery_limit (driver.ReasonDeliveryLimit). Default
	// DefaultDeliveryLimit (20); NoDeliveryLimit (-1) for none. Redrive's
	// own hand-backs (Requeue, a pause, shutdown) do not count: they are
	// copies (see docs/rabbitmq.md). The DLQs, the unroutable queue and
	// the delay queues have no limit: nothing would catch what they drop.
	// Classic queues have no delivery limit.
	DeliveryLimit int
	// DelayQueueType of the queues delayed messages wait in (the delay
	// tiers or levels): Classic or Quorum; default QueueType.
	DelayQueueType string
	// MaxLength, when positive, bounds each group queue (x-max-length);
	// overflow is dead-lettered with reason max_length (classic) or
	// refused to the publisher (quorum).
	MaxLength int
	// Delay configures the delay tiers.
	Delay DelayConfig
	// MaxMessageSize rejects larger messages before anything is sent;
	// default 128 MiB, RabbitMQ's own default limit.
	MaxMessageSize int
	// DialTimeout bounds one connection attempt; default 10 s.
	DialTimeout time.Duration
	// InstanceID names this worker process on the dead letters it makes
	// (x-redrive-worker-instance, the entry's worker_instance). Default
	// driver.DefaultInstance(): "<hostname>-<pid>".
	InstanceID string
	// KeeperBatch is the most dead letters the DLQ keeper
	// (ConsumeDeadLetterBatches) stores from one DLQ queue as one batch,
	// one store transaction, acked once it is committed; a batch also
	// stops at 4 MiB of bodies beyond its first. The keeper's prefetch is
	// twice KeeperBatch, so that the next batch is delivered while one is
	// stored: up to 2 × KeeperBatch dead letters per DLQ queue are held in
	// memory unstored. Default DefaultKeeperBatch (256); at most
	// MaxKeeperBatch.
	KeeperBatch int
	// KeeperBatchWait is how long a keeper's batch waits for more dead
	// letters after its first one, unless it is full sooner: without it a
	// backlog is stored one delivery per transaction, as fast as the
	// deliveries trickle in. It delays a lone dead letter's entry by as
	// much. Default DefaultKeeperBatchWait (5 ms); at most
	// MaxKeeperBatchWait.
	KeeperBatchWait time.Duration
	// Logger receives operational logs; default slog.Default().
	Logger *slog.Logger
}

// DelayConfig configures the delay tiers: queues of
// Resolution × Factor^k for k = 0..Levels-1.
type DelayConfig struct {
	// Mode is DelayRoute (default): the delay is written in the routing
	// key and the broker routes the message through one queue per
	// non-zero digit, with no consumer hop at all; or DelayHops: a
	// consumer republishes a waiting message once per tier pass.
	Mode string
	// Resolution is the shortest tier. Default DefaultResolution; > 0,
	// whole milliseconds.
	Resolution time.Duration
	// Factor multiplies each tier into the next. Default DefaultFactor;
	// at least 2.
	Factor int
	// Levels is the number of tiers. Default DefaultLevels; at least 1.
	Levels int
}

// withDefaults returns c with unset (zero) fields set to the defaults.
func (c DelayConfig) withDefaults() DelayConfig {
	if c.Mode == "" {
		c.Mode = DelayRoute
	}
	if c.Resolution == 0 {
		c.Resolution = DefaultResolution
	}
	if c.Factor == 0 {
		c.Factor = DefaultFactor
	}
	if c.Levels == 0 {
		c.Levels = DefaultLevels
	}
	return c
}

// Validate reports the first problem of c (defaults applied), naming the
// field as the configuration file does (delay.mode, delay.factor, ...).
func (c DelayConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Mode != DelayHops && c.Mode != DelayRoute:
		return fmt.Errorf("%w: delay.mode %q is not hops or route", ErrInvalidConfig, c.Mode)
	case c.Resolution <= 0:
		return fmt.Errorf("%w: delay.resolution %s must be positive", ErrInvalidConfig, c.Resolution)
	case c.Resolution%time.Millisecond != 0:
		return fmt.Errorf("%w: delay.resolution %s must be whole milliseconds", ErrInvalidConfig, c.Resolution)
	case c.Factor < 2:
		return fmt.Errorf("%w: delay.factor %d must be at least 2", ErrInvalidConfig, c.Factor)
	case c.Levels < 1:
		return fmt.Errorf("%w: delay.levels %d must be at least 1", ErrInvalidConfig, c.Levels)
	}
	if _, err := newTiers(c); err != nil {
		return fmt.Errorf("%w: delay: %v", ErrInvalidConfig, err)
	}
	return nil
}

// WithDefaults returns c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.URL == "" && len(c.URLs) == 0 {
		c.URL = DefaultURL
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.QueueType == "" {
		c.QueueType = Classic
	}
	if c.DelayQueueType == "" {
		c.DelayQueueType = c.QueueType
	}
	c.Delay = c.Delay.withDefaults()
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.InstanceID == "" {
		c.InstanceID = driver.DefaultInstance()
	}
	if c.DeliveryLimit == 0 {
		c.DeliveryLimit = DefaultDeliveryLimit
	}
	if c.KeeperBatch == 0 {
		c.KeeperBatch = DefaultKeeperBatch
	}
	if c.KeeperBatchWait == 0 {
		c.KeeperBatchWait = DefaultKeeperBatchWait
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c Config) Validate() error {
	if c.URL != "" && len(c.URLs) > 0 {
		return fmt.Errorf("%w: url and urls are both set (url is the one-URL form of urls: set one)", ErrInvalidConfig)
	}
	urls := c.Endpoints()
	for i, u := range urls {
		if _, err := amqp.ParseURI(u); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, urlField(len(urls), i, u), err)
		}
	}
	switch {
	case c.QueueType != Classic && c.QueueType != Quorum:
		return fmt.Errorf("%w: queue_type %q is not classic or quorum", ErrInvalidConfig, c.QueueType)
	case c.DelayQueueType != Classic && c.DelayQueueType != Quorum:
		return fmt.Errorf("%w: delay.queue_type %q is not classic or quorum", ErrInvalidConfig, c.DelayQueueType)
	case c.MaxLength < 0:
		return fmt.Errorf("%w: max_length %d is negative", ErrInvalidConfig, c.MaxLength)
	case c.DeliveryLimit < NoDeliveryLimit:
		return fmt.Errorf("%w: delivery_limit %d is below -1 (-1 = none)", ErrInvalidConfig, c.DeliveryLimit)
	case c.Prefix == "":
		return fmt.Errorf("%w: prefix is empty", ErrInvalidConfig)
	case c.KeeperBatch < 0 || c.KeeperBatch > MaxKeeperBatch:
		return fmt.Errorf("%w: keeper batch %d is not between 1 and %d (0 = the default %d)", ErrInvalidConfig, c.KeeperBatch, MaxKeeperBatch, DefaultKeeperBatch)
	case c.KeeperBatchWait < 0 || c.KeeperBatchWait > MaxKeeperBatchWait:
		return fmt.Errorf("%w: keeper batch wait %s is not between 0 and %s (0 = the default %s)", ErrInvalidConfig, c.KeeperBatchWait, MaxKeeperBatchWait, DefaultKeeperBatchWait)
	}
	return c.Delay.Validate()
}

// Endpoints are the URLs the broker dials, in order: URLs, or URL.
func (c Config) Endpoints() []string {
	if len(c.URLs) > 0 {
		return c.URLs
	}
	return []string{c.URL}
}

// MaskURL hides the secrets of an AMQP URL for logs and errors, whatever
// it parses to (see internal/redact).
func MaskURL(raw string) string { return redact.URL(raw) }
