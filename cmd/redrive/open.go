package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	_ "github.com/redrive/redrive/broker/kafka" // registers broker: kafka
	"github.com/redrive/redrive/broker/rabbit"  // registers broker: rabbitmq
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/lag"
)

// logger is the CLI's logger: warnings and errors on stderr.
func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// daemonLogger is the logger of the long-running commands (serve,
// exporter): info and above, as text, on w.
func daemonLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// openBroker connects the broker the configuration names.
func openBroker(ctx context.Context, c *config.Config) (broker.Broker, error) {
	return backend.Open(ctx, c, logger())
}

// quietRedis routes go-redis's own logging (a line per failed dial) to
// slog at debug level, once per process, so that an outage is logged once
// by the heartbeat code rather than on every attempt.
var quietRedis sync.Once

// redisClient returns a client of the configured Redis (it does not
// connect until used).
func redisClient(c *config.Config, log *slog.Logger) *redis.Client {
	quietRedis.Do(func() { redis.SetLogger(heartbeat.RedisLogger(log)) })
	return redis.NewClient(&redis.Options{Addr: c.Redis.Addr, Password: c.Redis.Password, DB: c.Redis.DB})
}

// kafkaClient returns a client of the configured Kafka seed brokers (it
// does not connect until used).
func kafkaClient(c *config.Config) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(c.Kafka.Brokers...))
}

// brokerAddress is where the configured broker is, secrets masked: for
// logs and errors.
func brokerAddress(c *config.Config) string {
	r := c.Redacted()
	if c.Broker == config.BrokerKafka {
		return strings.Join(r.Kafka.Brokers, ",")
	}
	return strings.Join(r.RabbitMQ.Endpoints(), ",")
}

// rabbitDepth returns the queue-depth measurer of the configured RabbitMQ,
// dialing the broker's URLs with its TLS settings.
func rabbitDepth(c *config.Config) (*lag.Rabbit, error) {
	rc, err := backend.ConfigOf[rabbit.Config](c, logger())
	if err != nil {
		return nil, err
	}
	return lag.NewRabbit(lag.RabbitConfig{URL: rc.URL, URLs: rc.URLs, TLS: rc.TLS})
}
