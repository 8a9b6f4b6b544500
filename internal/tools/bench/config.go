package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultMessages        = 100_000
	DefaultDelayMessages   = 10_000
	DefaultReplayMessages  = 10_000
	DefaultKeeperMessages  = 20_000
	DefaultRelayMessages   = 20_000
	DefaultSize            = 1024
	DefaultBatch           = 100
	DefaultConcurrency     = 8
	DefaultResolution      = 100 * time.Millisecond
	DefaultDelayFactor     = 4
	DefaultDelayLevels     = 5
	DefaultRabbitURL       = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultRedisAddr       = "127.0.0.1:6379"
	DefaultEffectsMessages = 10_000
	// DefaultScrapeGroups × DefaultScrapePartitions are the partition lags
	// of the scrape scenario; DefaultMonitorWorkers the heartbeats of the
	// monitor scenario; each is measured DefaultScrapes times.
	DefaultScrapeGroups     = 100
	DefaultScrapePartitions = 1000
	DefaultMonitorWorkers   = 10_000
	DefaultScrapes          = 20
)

// ErrInvalidConfig is wrapped by Config.Validate errors.
var ErrInvalidConfig = errors.New("bench: invalid config")

// Config configures Run. The zero value runs every scenario on both
// brokers with the defaults.
type Config struct {
	// Brokers to run: RabbitMQ, Kafka; default both.
	Brokers []string
	// Scenarios to run; default AllScenarios.
	Scenarios []string
	// Messages per publish, consume, retry and dlq run; default 100,000.
	Messages int
	// KafkaMessages per round of the Kafka consume, retry and dlq
	// scenarios (redrive, raw and peers); default 5 × Messages: at a
	// million records a second, a round of 100,000 lasts a tenth of a
	// second and its rate swung ±30 % (GC cycles, kfake on the same two
	// cores).
	KafkaMessages int
	// DelayMessages of the delay scenario; default 10,000.
	DelayMessages int
	// ReplayMessages of the replay scenario; default 10,000.
	ReplayMessages int
	// KeeperMessages are the dead letters of the keeper scenario (each
	// side drains as many); default 20,000.
	KeeperMessages int
	// RelayMessages are the messages of the relay scenario (each side
	// POSTs as many); default 20,000.
	RelayMessages int
	// EffectsMessages are the messages of each measurement of the effects
	// scenario (inbox drains, relay drain, commit-to-publish latency);
	// default 10,000.
	EffectsMessages int
	// KeeperBatch is rabbit.Config.KeeperBatch of the keeper scenario on
	// RabbitMQ; default the package's (rabbit.DefaultKeeperBatch).
	KeeperBatch int
	// DatabaseURL is the PostgreSQL the keeper and effects scenarios use
	// (a fresh schema each, dropped after); default DefaultDatabaseURL.
	DatabaseURL string
	// Size of each message body in bytes; default 1024.
	Size int
	// Batch is how many messages one Publish call (and one raw batch of
	// pipelined confirms / ProduceSync) carries; default 100.
	Batch int
	// Concurrency is the handler goroutines (RabbitMQ) on both sides;
	// prefetch is 8 × Concurrency on both sides. Kafka consumers run one
	// worker per partition (3) on both sides. Default 8.
	Concurrency int
	// RabbitURL is the RabbitMQ broker; default DefaultRabbitURL.
	RabbitURL string
	// KafkaBrokers are seed brokers of a running cluster; when empty Run
	// starts an in-process three-broker kfake cluster.
	KafkaBrokers []string
	// Resolution of the RabbitMQ delay tiers; default 100 ms.
	Resolution time.Duration
	// DelayFactor and DelayLevels shape redrive's RabbitMQ delay queues
	// (rabbit.DelayConfig); defaults 4 and 5.
	DelayFactor int
	DelayLevels int
	// DelaySpan is the longest delay the delay scenario draws (uniformly
	// in [0, DelaySpan], whole milliseconds); default 30 × Resolution.
	DelaySpan time.Duration
	// DelayMode is the RabbitMQ delay mode measured: rabbit.DelayRoute
	// (default) or rabbit.DelayHops.
	DelayMode string
	// QueueType of redrive's RabbitMQ queues and of the raw client's:
	// rabbit.Classic (default) or rabbit.Quorum.
	QueueType string
	// DelayQueueType of redrive's RabbitMQ delay queues; default
	// QueueType.
	DelayQueueType string
	// RedisAddr is the Redis of the monitor scenario; default
	// DefaultRedisAddr.
	RedisAddr string
	// ScrapeGroups and ScrapePartitions size the scrape scenario: that many
	// consumer groups, each with a committed offset on every one of that
	// many partitions; defaults 100 and 1,000.
	ScrapeGroups     int
	ScrapePartitions int
	// MonitorWorkers is how many worker heartbeats the monitor scenario
	// checks; default 10,000.
	MonitorWorkers int
	// Scrapes is how many scrapes (scrape) and checks (monitor) are timed;
	// default 20.
	Scrapes int
	// Peers, when set, also measures the libraries a user might pick
	// instead (ClientWatermillAMQP, ClientWatermillKafka, ClientKafkaGo)
	// on the PeerScenarios, each in a child process built from the peers
	// module with the go command.
	Peers bool
	// PeersDir is the peers module's directory; default FindPeersDir.
	PeersDir string
	// Timeout bounds each scenario; default 10 minutes.
	Timeout time.Duration
	// Logger receives the brokers' logs and progress; default discards.
	Logger *slog.Logger
	// Progress, when set, is told when each measurement starts.
	Progress func(scenario, brokerName, client string)
}

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if len(c.Brokers) == 0 {
		c.Brokers = AllBrokers
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = AllScenarios
	}
	if c.Messages == 0 {
		c.Messages = DefaultMessages
	}
	if c.KafkaMessages == 0 {
		c.KafkaMessages = 5 * c.Messages
	}
	if c.DelayMessages == 0 {
		c.DelayMessages = DefaultDelayMessages
	}
	if c.ReplayMessages == 0 {
		c.ReplayMessages = DefaultReplayMessages
	}
	if c.KeeperMessages == 0 {
		c.KeeperMessages = DefaultKeeperMessages
	}
	if c.RelayMessages == 0 {
		c.RelayMessages = DefaultRelayMessages
	}
	if c.EffectsMessages == 0 {
		c.EffectsMessages = DefaultEffectsMessages
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = DefaultDatabaseURL
	}
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.RabbitURL == "" {
		c.RabbitURL = DefaultRabbitURL
	}
	if c.QueueType == "" {
		c.QueueType = "classic"
	}
	if c.DelayQueueType == "" {
		c.DelayQueueType = c.QueueType
	}
	if c.Resolution == 0 {
		c.Resolution = DefaultResolution
	}
	if c.DelayFactor == 0 {
		c.DelayFactor = DefaultDelayFactor
	}
	if c.DelayLevels == 0 {
		c.DelayLevels = DefaultDelayLevels
	}
	if c.DelaySpan == 0 {
		c.DelaySpan = 30 * c.Resolution
	}
	if c.RedisAddr == "" {
		c.RedisAddr = DefaultRedisAddr
	}
	if c.ScrapeGroups == 0 {
		c.ScrapeGroups = DefaultScrapeGroups
	}
	if c.ScrapePartitions == 0 {
		c.ScrapePartitions = DefaultScrapePartitions
	}
	if c.MonitorWorkers == 0 {
		c.MonitorWorkers = DefaultMonitorWorkers
	}
	if c.Scrapes == 0 {
		c.Scrapes = DefaultScrapes
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first problem, naming the field.
func (c Config) Validate() error {
	for _, b := range c.Brokers {
		if !slices.Contains(AllBrokers, b) {
			return fmt.Errorf("%w: broker %q is not %s", ErrInvalidConfig, b, strings.Join(AllBrokers, " or "))
		}
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(AllScenarios, s) {
			return fmt.Errorf("%w: scenario %q is not one of %s", ErrInvalidConfig, s, strings.Join(AllScenarios, ", "))
		}
	}
	switch {
	case c.Messages < 0:
		return fmt.Errorf("%w: messages %d is negative", ErrInvalidConfig, c.Messages)
	case c.KafkaMessages < 0:
		return fmt.Errorf("%w: kafka messages %d is negative", ErrInvalidConfig, c.KafkaMessages)
	case c.DelayMessages < 0:
		return fmt.Errorf("%w: delay messages %d is negative", ErrInvalidConfig, c.DelayMessages)
	case c.ReplayMessages < 0:
		return fmt.Errorf("%w: replay messages %d is negative", ErrInvalidConfig, c.ReplayMessages)
	case c.KeeperBatch < 0:
		return fmt.Errorf("%w: keeper batch %d is negative", ErrInvalidConfig, c.KeeperBatch)
	case c.KeeperMessages < 0:
		return fmt.Errorf("%w: keeper messages %d is negative", ErrInvalidConfig, c.KeeperMessages)
	case c.RelayMessages < 0:
		return fmt.Errorf("%w: relay messages %d is negative", ErrInvalidConfig, c.RelayMessages)
	case c.EffectsMessages < 0:
		return fmt.Errorf("%w: effects messages %d is negative", ErrInvalidConfig, c.EffectsMessages)
	case c.Size < 0:
		return fmt.Errorf("%w: size %d is negative", ErrInvalidConfig, c.Size)
	case c.Batch < 0:
		return fmt.Errorf("%w: batch %d is negative", ErrInvalidConfig, c.Batch)
	case c.Concurrency < 0:
		return fmt.Errorf("%w: concurrency %d is negative", ErrInvalidConfig, c.Concurrency)
	case c.ScrapeGroups < 0 || c.ScrapePartitions < 0 || c.MonitorWorkers < 0 || c.Scrapes < 0:
		return fmt.Errorf("%w: scrape groups, scrape partitions, monitor workers and scrapes must not be negative", ErrInvalidConfig)
	case c.Resolution < 0 || c.Resolution%time.Millisecond != 0:
		return fmt.Errorf("%w: resolution %s must be whole positive milliseconds", ErrInvalidConfig, c.Resolution)
	case c.DelaySpan < 0 || c.DelaySpan%time.Millisecond != 0:
		return fmt.Errorf("%w: delay span %s must be whole positive milliseconds", ErrInvalidConfig, c.DelaySpan)
	case c.DelayFactor < 0 || c.DelayFactor == 1 || c.DelayLevels < 0:
		return fmt.Errorf("%w: delay factor %d must be at least 2 and delay levels %d positive", ErrInvalidConfig, c.DelayFactor, c.DelayLevels)
	}
	for _, t := range []struct{ name, v string }{{"queue type", c.QueueType}, {"delay queue type", c.DelayQueueType}} {
		if t.v != "" && t.v != "classic" && t.v != "quorum" {
			return fmt.Errorf("%w: %s %q is not classic or quorum", ErrInvalidConfig, t.name, t.v)
		}
	}
	return nil
}

func (c Config) runs(scenario string) bool { return slices.Contains(c.Scenarios, scenario) }
