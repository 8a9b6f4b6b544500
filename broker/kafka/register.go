package kafka

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
)

// The configuration file reaches this package only through the registry
// of internal/backend: the open function, the Config mapping
// (backend.ConfigOf[kafka.Config]) and the DLQ names (backend.RouterOf).
func init() {
	backend.Register(broker.Kafka, func(ctx context.Context, c *config.Config, log *slog.Logger) (broker.Broker, error) {
		cfg, err := configOf(c, log)
		if err != nil {
			return nil, err
		}
		return New(ctx, cfg)
	})
	backend.RegisterConfig(configOf)
	backend.RegisterRouter(broker.Kafka, Router{})
}

// configOf is the Config of a redrive configuration: its kafka section and
// the heartbeat instance.
func configOf(c *config.Config, log *slog.Logger) (Config, error) {
	cfg, err := configFrom(c.Kafka, log)
	if err != nil {
		return Config{}, err
	}
	cfg.InstanceID = c.Heartbeat.Instance // empty: hostname-pid
	return cfg, nil
}

// configFrom maps the kafka section of a redrive configuration file to a
// Config: TLS (its files loaded) and SASL become client options.
func configFrom(c config.Kafka, log *slog.Logger) (Config, error) {
	cfg := Config{
		Brokers:           c.Brokers,
		Partitions:        c.Partitions,
		ReplicationFactor: int16(c.ReplicationFactor),
		ClientID:          c.ClientID,
		CommitInterval:    c.CommitInterval.Duration(),
		FetchMaxWait:      c.FetchMaxWait.Duration(),
		HeartbeatInterval: c.HeartbeatInterval.Duration(),
		SessionTimeout:    c.SessionTimeout.Duration(),
		RebalanceTimeout:  c.RebalanceTimeout.Duration(),
		ShareMembers:      c.Share.Members,
		ShareMaxHold:      c.Share.MaxHold.Duration(),
		ShareFetchAhead:   c.Share.FetchAhead,
		Logger:            log,
	}
	if len(c.ForeignDLQs) > 0 {
		cfg.ForeignDLQs = make(map[string]ForeignFormat, len(c.ForeignDLQs))
		for _, f := range c.ForeignDLQs {
			cfg.ForeignDLQs[f.Topic] = ForeignFormat(f.WithDefaults().Format)
		}
	}
	if c.TLS != nil {
		tlsCfg, err := c.TLS.Config()
		if err != nil {
			return Config{}, fmt.Errorf("kafka: kafka.tls: %w", err)
		}
		cfg.ClientOptions = append(cfg.ClientOptions, kgo.DialTLSConfig(tlsCfg))
	}
	if c.SASL != nil {
		m, err := saslMechanism(*c.SASL)
		if err != nil {
			return Config{}, err
		}
		cfg.ClientOptions = append(cfg.ClientOptions, kgo.SASL(m))
	}
	return cfg, nil
}

// saslMechanism is the franz-go mechanism of s.
func saslMechanism(s config.SASL) (sasl.Mechanism, error) {
	switch s.Mechanism {
	case config.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case config.SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case config.SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("%w: sasl.mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", ErrInvalidConfig, s.Mechanism)
}
