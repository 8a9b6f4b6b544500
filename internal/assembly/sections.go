package assembly

import (
	"fmt"
	"log/slog"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly/config"
)

// section is what the assembly knows of a backend with a section of its
// own in the configuration file (its key is the backend's name).
type section struct {
	// config maps the section to the backend's Config.
	config func(c *config.Config, log *slog.Logger) (any, error)
	// check runs the backend's name checks on the section and workers.
	check func(c *config.Config) []driver.Problem
	// foreign lists the section's foreign DLQs.
	foreign func(c *config.Config) []ForeignDLQ
	// address lists where the broker is, from a redacted configuration.
	address func(c *config.Config) []string
}

// sections are the built-in backends'.
var sections = map[string]section{
	rabbit.Name: {
		config: func(c *config.Config, log *slog.Logger) (any, error) { return RabbitConfig(c, log) },
		check: func(c *config.Config) []driver.Problem {
			r := c.RabbitMQ
			cfg := rabbit.Config{Prefix: r.Prefix, QueueType: r.QueueType, MaxLength: r.MaxLength, Delay: rabbitDelay(r.Delay)}
			queues := make([]string, len(r.ForeignDLQs))
			for i, f := range r.ForeignDLQs {
				queues[i] = f.Queue
			}
			return rabbit.CheckNames(cfg, c.Subscriptions(), queues)
		},
		foreign: func(c *config.Config) []ForeignDLQ {
			out := make([]ForeignDLQ, 0, len(c.RabbitMQ.ForeignDLQs))
			for _, q := range c.RabbitMQ.ForeignDLQs {
				q = q.WithDefaults()
				to := q.ReplayTo
				out = append(out, ForeignDLQ{Name: q.Queue, Severity: q.Severity, Retention: q.Retention,
					Route: rabbit.ForeignRoute(q.Queue, rabbit.ForeignTarget{Exchange: to.Exchange, RoutingKey: to.RoutingKey, XDeathExchanges: to.XDeathExchanges})})
			}
			return out
		},
		address: func(c *config.Config) []string { return c.RabbitMQ.Endpoints() },
	},
	kafka.Name: {
		config: func(c *config.Config, log *slog.Logger) (any, error) { return KafkaConfig(c, log) },
		check: func(c *config.Config) []driver.Problem {
			foreign := make([]kafka.ForeignDLQ, len(c.Kafka.ForeignDLQs))
			for i, f := range c.Kafka.ForeignDLQs {
				foreign[i] = kafka.ForeignDLQ{Topic: f.Topic, ReplayTo: f.ReplayTo}
			}
			return kafka.CheckNames(c.Subscriptions(), foreign)
		},
		foreign: func(c *config.Config) []ForeignDLQ {
			out := make([]ForeignDLQ, 0, len(c.Kafka.ForeignDLQs))
			for _, f := range c.Kafka.ForeignDLQs {
				f = f.WithDefaults()
				out = append(out, ForeignDLQ{Name: f.Topic, Severity: f.Severity, Retention: f.Retention,
					Route: kafka.ForeignRoute(f.Topic, f.ReplayTo)})
			}
			return out
		},
		address: func(c *config.Config) []string { return c.Kafka.Brokers },
	},
}

// RabbitConfig is the rabbit.Config of a configuration: its rabbitmq
// section (the TLS files it names loaded), the heartbeat instance and
// log.
func RabbitConfig(c *config.Config, log *slog.Logger) (rabbit.Config, error) {
	r := c.RabbitMQ
	tlsCfg, err := r.TLS.Config()
	if err != nil {
		return rabbit.Config{}, fmt.Errorf("rabbit: rabbitmq.tls: %w", err)
	}
	return rabbit.Config{
		URL:            r.URL,
		URLs:           r.URLs,
		TLS:            tlsCfg,
		Prefix:         r.Prefix,
		QueueType:      r.QueueType,
		DelayQueueType: r.Delay.QueueType,
		MaxLength:      r.MaxLength,
		DeliveryLimit:  r.DeliveryLimit,
		Delay:          rabbitDelay(r.Delay),
		InstanceID:     c.Heartbeat.Instance, // empty: hostname-pid
		Logger:         orDefault(log),

		KeeperBatch:     r.KeeperBatch,
		KeeperBatchWait: r.KeeperBatchWait.Duration(),
	}, nil
}

func rabbitDelay(d config.Delay) rabbit.DelayConfig {
	return rabbit.DelayConfig{Mode: d.Mode, Resolution: d.Resolution.Duration(), Factor: d.Factor, Levels: d.Levels}
}

// KafkaConfig is the kafka.Config of a configuration: its kafka section
// (TLS, its files loaded, and SASL as client options), the heartbeat
// instance and log.
func KafkaConfig(c *config.Config, log *slog.Logger) (kafka.Config, error) {
	k := c.Kafka
	cfg := kafka.Config{
		Brokers:           k.Brokers,
		Partitions:        k.Partitions,
		ReplicationFactor: int16(k.ReplicationFactor),
		ClientID:          k.ClientID,
		CommitInterval:    k.CommitInterval.Duration(),
		FetchMaxWait:      k.FetchMaxWait.Duration(),
		HeartbeatInterval: k.HeartbeatInterval.Duration(),
		SessionTimeout:    k.SessionTimeout.Duration(),
		RebalanceTimeout:  k.RebalanceTimeout.Duration(),
		ShareMembers:      k.Share.Members,
		ShareStandby:      k.Share.Standby,
		ShareMaxHold:      k.Share.MaxHold.Duration(),
		ShareFetchAhead:   k.Share.FetchAhead,
		InstanceID:        c.Heartbeat.Instance, // empty: hostname-pid
		Logger:            orDefault(log),
	}
	if len(k.ForeignDLQs) > 0 {
		cfg.ForeignDLQs = make(map[string]kafka.ForeignFormat, len(k.ForeignDLQs))
		for _, f := range k.ForeignDLQs {
			cfg.ForeignDLQs[f.Topic] = kafka.ForeignFormat(f.WithDefaults().Format)
		}
	}
	if k.TLS != nil {
		tlsCfg, err := k.TLS.Config()
		if err != nil {
			return kafka.Config{}, fmt.Errorf("kafka: kafka.tls: %w", err)
		}
		cfg.TLS = tlsCfg
	}
	if k.SASL != nil {
		cfg.SASL = &kafka.SASL{Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, Password: k.SASL.Password}
		if err := cfg.SASL.Validate(); err != nil {
			return kafka.Config{}, err
		}
	}
	return cfg, nil
}

func orDefault(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}
