package daemon

import (
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
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

// BrokerAddress is where the configured broker is, secrets masked: for
// logs and errors.
func BrokerAddress(c *config.Config) string { return assembly.Address(c) }
