package rabbit

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
)

// The configuration file reaches this package only through the registry
// of internal/backend: the open function, the Config mapping
// (backend.ConfigOf[rabbit.Config]), the DLQ names (backend.RouterOf) and
// the delay queues (backend.DelayQueues).
func init() {
	backend.Register(broker.RabbitMQ, func(ctx context.Context, c *config.Config, log *slog.Logger) (broker.Broker, error) {
		cfg, err := configOf(c, log)
		if err != nil {
			return nil, err
		}
		return New(ctx, cfg)
	})
	backend.RegisterConfig(configOf)
	backend.RegisterRouter(broker.RabbitMQ, Router{})
	backend.RegisterDelayQueues(broker.RabbitMQ, func(c *config.Config) ([]string, error) {
		return delayQueuesFrom(c.RabbitMQ)
	})
}

// configOf is the Config of a redrive configuration: its rabbitmq section
// and the heartbeat instance.
func configOf(c *config.Config, log *slog.Logger) (Config, error) {
	cfg, err := configFrom(c.RabbitMQ, log)
	if err != nil {
		return Config{}, err
	}
	cfg.InstanceID = c.Heartbeat.Instance // empty: hostname-pid
	return cfg, nil
}

// configFrom maps the rabbitmq section of a redrive configuration file to a
// Config, loading the TLS files it names.
func configFrom(c config.RabbitMQ, log *slog.Logger) (Config, error) {
	tlsCfg, err := c.TLS.Config()
	if err != nil {
		return Config{}, fmt.Errorf("rabbit: rabbitmq.tls: %w", err)
	}
	return Config{
		URL:            c.URL,
		URLs:           c.URLs,
		TLS:            tlsCfg,
		Prefix:         c.Prefix,
		QueueType:      c.QueueType,
		DelayQueueType: c.Delay.QueueType,
		MaxLength:      c.MaxLength,
		DeliveryLimit:  c.DeliveryLimit,
		Delay:          delayFrom(c.Delay),
		Logger:         log,

		KeeperBatch:     c.KeeperBatch,
		KeeperBatchWait: c.KeeperBatchWait.Duration(),
	}, nil
}

// delayQueuesFrom returns the queues delayed messages wait in under the
// rabbitmq section of a redrive configuration (see DelayQueues), without
// connecting or reading its TLS files.
func delayQueuesFrom(c config.RabbitMQ) ([]string, error) {
	return DelayQueues(Config{Prefix: c.Prefix, QueueType: c.QueueType, Delay: delayFrom(c.Delay)})
}

func delayFrom(d config.Delay) DelayConfig {
	return DelayConfig{Mode: d.Mode, Resolution: d.Resolution.Duration(), Factor: d.Factor, Levels: d.Levels}
}
