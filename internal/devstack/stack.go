package devstack

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"text/template"

	"github.com/alicebob/miniredis/v2"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/internal/config"
)

// Brokers Start knows.
const (
	BrokerKafka    = config.BrokerKafka
	BrokerRabbitMQ = config.BrokerRabbitMQ
)

// Defaults of Config.
const (
	DefaultRabbitMQURL   = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultAdminListen   = "127.0.0.1:8080"
	DefaultMetricsListen = "127.0.0.1:9477"
)

//go:embed config.yaml.tmpl
var configTemplate string

var tmpl = template.Must(template.New("config").Parse(configTemplate))

// Config configures Start.
type Config struct {
	// Broker is BrokerKafka (default: an embedded three-broker kfake
	// cluster) or BrokerRabbitMQ (the server at RabbitMQURL).
	Broker string
	// RabbitMQURL is used with BrokerRabbitMQ; default DefaultRabbitMQURL.
	RabbitMQURL string
	// AdminListen and MetricsListen are the addresses of the admin API
	// (with the console) and of the exporter; defaults DefaultAdminListen
	// and DefaultMetricsListen.
	AdminListen, MetricsListen string
	// Token is the operator's console and API token. Required.
	Token string
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Validate reports the first problem of c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Broker != "" && c.Broker != BrokerKafka && c.Broker != BrokerRabbitMQ:
		return fmt.Errorf("devstack: broker %q is not kafka or rabbitmq", c.Broker)
	case c.Token == "":
		return errors.New("devstack: token: required")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Broker == "" {
		c.Broker = BrokerKafka
	}
	if c.RabbitMQURL == "" {
		c.RabbitMQURL = DefaultRabbitMQURL
	}
	if c.AdminListen == "" {
		c.AdminListen = DefaultAdminListen
	}
	if c.MetricsListen == "" {
		c.MetricsListen = DefaultMetricsListen
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Stack is a running dev environment: the embedded servers and the
// configuration that points at them.
type Stack struct {
	// Config is the configuration redrive runs with: the embedded Kafka
	// (or RabbitMQ), the embedded Redis, the sample workers, short
	// heartbeat intervals and demo-length back-offs.
	Config *config.Config
	// YAML is Config as text, for showing.
	YAML []byte

	kafka *kfake.Cluster // nil on RabbitMQ
	redis *miniredis.Miniredis
}

// Start starts the embedded servers on 127.0.0.1 (random ports) and
// builds the configuration. Close stops them.
func Start(cfg Config) (*Stack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Stack{redis: miniredis.NewMiniRedis()}
	// miniredis keeps TTLs still unless told to follow the clock; heartbeats
	// must expire for a stopped worker to read missing.
	s.redis.ClockTTL(true)
	if err := s.redis.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("devstack: start embedded redis: %w", err)
	}
	var brokers []string
	if cfg.Broker == BrokerKafka {
		c, err := kfake.NewCluster(kfake.NumBrokers(3)) // listens on 127.0.0.1
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("devstack: start embedded kafka: %w", err)
		}
		s.kafka = c
		brokers = c.ListenAddrs()
	}
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, map[string]any{
		"Broker": cfg.Broker, "RabbitMQURL": cfg.RabbitMQURL, "KafkaBrokers": brokers,
		"RedisAddr": s.redis.Addr(), "AdminListen": cfg.AdminListen, "MetricsListen": cfg.MetricsListen,
		"Token": cfg.Token,
	})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("devstack: render configuration: %w", err)
	}
	s.YAML = buf.Bytes()
	if s.Config, err = config.Parse(s.YAML); err != nil {
		s.Close()
		return nil, fmt.Errorf("devstack: configuration: %w", err)
	}
	return s, nil
}

// KafkaBrokers returns the embedded cluster's addresses (none on RabbitMQ).
func (s *Stack) KafkaBrokers() []string {
	if s.kafka == nil {
		return nil
	}
	return s.kafka.ListenAddrs()
}

// RedisAddr returns the embedded Redis server's address.
func (s *Stack) RedisAddr() string { return s.redis.Addr() }

// Close stops the embedded servers. Their data is gone.
func (s *Stack) Close() {
	if s.kafka != nil {
		s.kafka.Close()
	}
	s.redis.Close()
}
