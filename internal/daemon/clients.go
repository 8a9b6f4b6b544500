package daemon

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/lag"
)

// The clients of a configuration's services, which the CLI's one-shot
// commands (lag, workers, dev) use as well.

// quietRedis routes go-redis's own logging (a line per failed dial) to
// slog at debug level, once per process, so that an outage is logged once
// by the heartbeat code rather than on every attempt.
var quietRedis sync.Once

// RedisClient returns a client of the configured Redis (it does not
// connect until used).
func RedisClient(c *config.Config, log *slog.Logger) *redis.Client {
	quietRedis.Do(func() { redis.SetLogger(heartbeat.RedisLogger(log)) })
	return redis.NewClient(&redis.Options{Addr: c.Redis.Addr, Password: c.Redis.Password, DB: c.Redis.DB})
}

// KafkaClient returns a client of the configured Kafka seed brokers (it
// does not connect until used).
func KafkaClient(c *config.Config) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(c.Kafka.Brokers...))
}

// BrokerAddress is where the configured broker is, secrets masked: for
// logs and errors.
func BrokerAddress(c *config.Config) string {
	r := c.Redacted()
	if c.Broker == broker.Kafka {
		return strings.Join(r.Kafka.Brokers, ",")
	}
	return strings.Join(r.RabbitMQ.Endpoints(), ",")
}

// RabbitDepth returns the queue-depth measurer of the configured RabbitMQ,
// dialing the broker's URLs with its TLS settings.
func RabbitDepth(c *config.Config, log *slog.Logger) (*lag.Rabbit, error) {
	rc, err := backend.ConfigOf[rabbit.Config](c, log)
	if err != nil {
		return nil, err
	}
	return lag.NewRabbit(lag.RabbitConfig{URL: rc.URL, URLs: rc.URLs, TLS: rc.TLS})
}
