package worker

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/worker/killswitch"
)

// DefaultPausePoll is how often each worker reads its operator pause from
// Redis (Config.PausePoll): an instance stops taking messages at most this
// long after `redrive workers pause`.
const DefaultPausePoll = 2 * time.Second

// Config configures a Runtime (Load, Parse, New). The zero Config is the
// default: a runtime that logs to slog.Default(), handles SIGINT and
// SIGTERM, and publishes no heartbeat, counts no claims and exports no
// metrics. Fields that the configuration file also sets (Load, Parse)
// override it when set.
type Config struct {
	// Logger is the runtime's and the backend's logger. Default
	// slog.Default().
	Logger *slog.Logger
	// Instance names this worker process in its heartbeats
	// (worker:{name}:{id}), the worker_instance label and, for a runtime
	// from Load or Parse, the dead letters it makes, overriding the
	// configuration's heartbeat.instance. Give it a name that survives a
	// restart (a pod name): the restarted process then takes over its
	// predecessor's heartbeat. Default: heartbeat.instance, else the
	// broker's instance, else hostname-pid.
	Instance string
	// NoSignals stops Run from handling SIGINT and SIGTERM itself; the
	// caller's context alone ends it. Default false: Run stops on either.
	NoSignals bool
	// Registerer exports the workers' handler metrics:
	// worker_handler_duration_seconds{worker},
	// worker_retry_total{worker,error_class},
	// worker_kill_switch_trips_total{worker} and, with claims,
	// redrive_claims_unavailable_total. Default nil: no metrics.
	Registerer prometheus.Registerer
	// HeartbeatRedis publishes a Redis heartbeat per worker
	// (worker:{name}:{instance}) while Run runs, SHUTTING_DOWN while it
	// drains, and removes it after a clean stop; the operator's pause
	// (`redrive workers pause`) is read there too, and claims are counted
	// there unless ClaimsRedis is set. Redis being down never stops the
	// workers. Default nil: for a runtime from Load or Parse whose
	// configuration has a redis: section, a client of that Redis (closed
	// when Run returns); else no heartbeat, no operator pause. Run says
	// at start which it is.
	HeartbeatRedis redis.Cmdable
	// RedisPrefix goes in front of every Redis key the workers write and
	// read (heartbeats, pauses, claims), overriding the configuration's
	// redis.prefix. Default "": the configuration's, else none.
	RedisPrefix string
	// HeartbeatInterval is the heartbeat refresh interval. Default 0: the
	// configuration's heartbeat.interval (Load, Parse), else the heartbeat
	// package's default; >= 0.
	HeartbeatInterval time.Duration
	// HeartbeatTTL is the heartbeat key's TTL. Default 0: the
	// configuration's heartbeat.ttl (Load, Parse), else the heartbeat
	// package's default; >= 0.
	HeartbeatTTL time.Duration
	// ClaimsRedis counts claims for poison-pill protection
	// (workers[].max_claims) on Kafka and RabbitMQ classic queues: a
	// message delivered max_claims times without its handler finishing is
	// dead-lettered with reason max_claims. Redis being down never stops
	// the workers: messages are then handled without the protection.
	// Default nil: HeartbeatRedis, else no claim counter.
	ClaimsRedis redis.Cmdable
	// Health serves health probes on this host:port while Run runs,
	// overriding the configuration's health.listen:
	//
	//	GET /livez   200 while every worker's consumer loop runs (draining
	//	             included); 503 once one ended with an error
	//	GET /readyz  200 while every worker consumes: the broker is connected
	//	             and each subscription's consumer is up (see below); 503 as
	//	             soon as graceful shutdown starts, and while any is not
	//
	// A subscription is up on RabbitMQ when its consumer holds an open
	// channel consuming the group queue (a lost connection turns it down
	// until the consumer reconnected); on Kafka when its group client
	// answers an ApiVersions round trip. Each answer is a line per check,
	// as text. Default "": health.listen, else no probes.
	Health string
	// KillSwitches gives workers, by name, a kill switch (see package
	// killswitch), overriding the configuration's workers[].kill_switch; a
	// killswitch.Config that is not Enabled removes it. Each must be
	// valid. Default nil: the configuration's.
	KillSwitches map[string]killswitch.Config
	// PausePoll is how often each worker reads its operator pause from
	// HeartbeatRedis. Default DefaultPausePoll; >= 0.
	PausePoll time.Duration
	// Workers names the configured workers a runtime from Load or Parse
	// runs; each must be configured. Default nil: every configured worker
	// without an endpoint (a worker with one is redrive relay's, see
	// package relay).
	Workers []string
	// EndpointStats gives, by worker name, what the worker's heartbeats say
	// about the HTTP endpoint its handler delivers to (package relay sets
	// it; heartbeat.Endpoint). Default nil: nothing.
	EndpointStats map[string]func() *heartbeat.Endpoint
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	switch {
	case c.HeartbeatInterval < 0:
		return fmt.Errorf("worker: Config.HeartbeatInterval: must be >= 0, got %s", c.HeartbeatInterval)
	case c.HeartbeatTTL < 0:
		return fmt.Errorf("worker: Config.HeartbeatTTL: must be >= 0, got %s", c.HeartbeatTTL)
	case c.PausePoll < 0:
		return fmt.Errorf("worker: Config.PausePoll: must be >= 0, got %s", c.PausePoll)
	}
	for i, name := range c.Workers {
		if name == "" {
			return fmt.Errorf("worker: Config.Workers[%d]: empty worker name", i)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.KillSwitches)) {
		if name == "" {
			return fmt.Errorf("worker: Config.KillSwitches: empty worker name")
		}
		if err := c.KillSwitches[name].Validate(); err != nil {
			return fmt.Errorf("worker: Config.KillSwitches[%q]: %w", name, err)
		}
	}
	return nil
}
