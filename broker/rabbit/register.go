package rabbit

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
)

func init() {
	backend.Register(config.BrokerRabbitMQ, func(ctx context.Context, c *config.Config, log *slog.Logger) (broker.Broker, error) {
		cfg, err := ConfigFrom(c.RabbitMQ, log)
		if err != nil {
			return nil, err
		}
		return New(ctx, cfg)
	})
}

// ConfigFrom maps the rabbitmq section of a redrive configuration file to a
// Config, loading the TLS files it names.
func ConfigFrom(c config.RabbitMQ, log *slog.Logger) (Config, error) {
	tlsCfg, err := c.TLS.Config()
	if err != nil {
		return Config{}, fmt.Errorf("rabbit: rabbitmq.tls: %w", err)
	}
	return Config{
		URL:       c.URL,
		TLS:       tlsCfg,
		Prefix:    c.Prefix,
		QueueType: c.QueueType,
		MaxLength: c.MaxLength,
		Delay: DelayConfig{
			Mode:       c.Delay.Mode,
			Resolution: c.Delay.Resolution.Duration(),
			Factor:     c.Delay.Factor,
			Levels:     c.Delay.Levels,
		},
		Logger: log,
	}, nil
}
