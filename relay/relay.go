package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/worker"
)

// ErrNoEndpoint is returned by Load and Parse when no configured worker
// has an endpoint: the relay would have nothing to do.
var ErrNoEndpoint = errors.New("relay: no configured worker has an endpoint")

// Config configures a Relay (Load, Parse). The zero Config is the
// default.
type Config struct {
	// Runtime configures the worker runtime the relay consumes with: its
	// logger, instance name, heartbeats (HeartbeatRedis: the workers beat
	// under their own names), claims, metrics registerer (the endpoints'
	// metrics too), health probes, signals. Its Workers and EndpointStats
	// are the relay's own: leave them unset. Default: worker.Config{}.
	Runtime worker.Config
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	switch {
	case c.Runtime.Workers != nil:
		return errors.New("relay: Config.Runtime.Workers: set by the relay (the workers with an endpoint)")
	case c.Runtime.EndpointStats != nil:
		return errors.New("relay: Config.Runtime.EndpointStats: set by the relay")
	}
	if err := c.Runtime.Validate(); err != nil {
		return fmt.Errorf("relay: Config.Runtime: %w", err)
	}
	return nil
}

// Relay consumes the messages of every configured worker that has an
// endpoint, exactly as a Go worker of the same configuration would (its
// queue or group, retry mode and schedule, kill switch, operator pause,
// heartbeats under its name, max age, claims), and delivers each to the
// endpoint as an HTTP POST (see Endpoint.Handle).
type Relay struct {
	rt        *worker.Runtime
	endpoints map[string]*Endpoint
}

// Load reads the configuration file at path and connects to the broker it
// names; Run consumes with the workers that have an endpoint.
func Load(ctx context.Context, path string, cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	file, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return build(file, cfg, func(rc worker.Config) (*worker.Runtime, error) { return worker.Load(ctx, path, rc) })
}

// Parse is Load for configuration bytes.
func Parse(ctx context.Context, yaml []byte, cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	file, err := config.Parse(yaml)
	if err != nil {
		return nil, err
	}
	return build(file, cfg, func(rc worker.Config) (*worker.Runtime, error) { return worker.Parse(ctx, yaml, rc) })
}

// build makes the endpoints of file's workers, then the runtime that
// consumes for them.
func build(file *config.Config, cfg Config, runtime func(worker.Config) (*worker.Runtime, error)) (*Relay, error) {
	r := &Relay{endpoints: map[string]*Endpoint{}}
	rc := cfg.Runtime
	rc.EndpointStats = map[string]func() *heartbeat.Endpoint{}
	for _, w := range file.Workers {
		if w.Endpoint == nil {
			continue
		}
		ec, err := endpointConfig(w, cfg)
		if err != nil {
			return nil, err
		}
		ep, err := NewEndpoint(ec)
		if err != nil {
			return nil, fmt.Errorf("relay: worker %s: %w", w.Name, err)
		}
		r.endpoints[w.Name] = ep
		rc.Workers = append(rc.Workers, w.Name)
		rc.EndpointStats[w.Name] = ep.Stats
	}
	if len(rc.Workers) == 0 {
		return nil, ErrNoEndpoint
	}
	rt, err := runtime(rc)
	if err != nil {
		return nil, err
	}
	r.rt = rt
	return r, nil
}

// endpointConfig maps a worker's endpoint section (defaults applied) to
// an EndpointConfig.
func endpointConfig(w config.Worker, cfg Config) (EndpointConfig, error) {
	e, sub := w.Endpoint, w.Subscription()
	tc, err := e.TLS.ClientTLS().Config()
	if err != nil {
		return EndpointConfig{}, fmt.Errorf("relay: worker %s: endpoint.tls: %w", w.Name, err)
	}
	return EndpointConfig{
		Worker:            w.Name,
		Topic:             w.Topic,
		URL:               e.URL,
		Timeout:           time.Duration(e.Timeout),
		Concurrency:       sub.Concurrency,
		PermanentStatuses: slices.Clone(e.PermanentStatuses),
		MaxRedirects:      e.MaxRedirects,
		ContentType:       e.ContentType,
		MaxHeaderBytes:    e.MaxHeaderBytes,
		MaxRetryAfter:     sub.Policy.LongestDelay(),
		BearerToken:       e.BearerToken,
		TLS:               tc,
		Registerer:        cfg.Runtime.Registerer,
	}, nil
}

// Run consumes with every worker that has an endpoint until ctx ends or
// the process gets SIGINT or SIGTERM (see worker.Runtime.Run), then
// closes the broker and the endpoints' connections.
func (r *Relay) Run(ctx context.Context) error {
	handlers := worker.Handlers{}
	for name, ep := range r.endpoints {
		handlers[name] = ep.Handle
	}
	defer func() {
		for _, ep := range r.endpoints {
			ep.Close()
		}
	}()
	return r.rt.Run(ctx, handlers)
}

// Runtime returns the worker runtime the relay consumes with (its
// broker, subscriptions and health address).
func (r *Relay) Runtime() *worker.Runtime { return r.rt }

// Endpoint returns the endpoint of the named worker, nil when it has none.
func (r *Relay) Endpoint(worker string) *Endpoint { return r.endpoints[worker] }

// Workers returns the names of the workers the relay delivers, sorted.
func (r *Relay) Workers() []string {
	names := make([]string, 0, len(r.endpoints))
	for n := range r.endpoints {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
