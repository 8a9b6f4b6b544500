package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/tracing"
	"github.com/redrive/redrive/worker/killswitch"
)

// Errors Run returns before it subscribes anything.
var (
	// ErrNoHandler: a configured worker has no handler.
	ErrNoHandler = errors.New("worker: configured worker has no handler")
	// ErrNoWorker: a handler was given for a worker the configuration does
	// not define.
	ErrNoWorker = errors.New("worker: handler has no configured worker")
)

// Handlers maps worker names (the `workers[].name` of the configuration) to
// their handlers.
type Handlers map[string]broker.Handler

// Runtime runs handlers for the workers of one configuration.
type Runtime struct {
	b      broker.Broker
	own    bool // Run closes b
	subs   []broker.Subscription
	log    *slog.Logger
	signal bool
	reg    prometheus.Registerer
	rdb    redis.Cmdable
	// claimsRDB counts claims (Config.ClaimsRedis, HeartbeatRedis); nil = none.
	claimsRDB redis.Cmdable
	hb        config.Heartbeat // intervals, from the configuration when loaded
	// redisCfg is the configuration's redis: section; prefix its keys'
	// prefix (redis.prefix). ownRDB is the client Load opened for a
	// configuration with a redis: section, closed when Run ends.
	redisCfg config.Redis
	prefix   string
	ownRDB   *redis.Client
	// instance names this process (Config.Instance, heartbeat.instance);
	// empty until Run, which falls back to the broker's or hostname-pid.
	instance string
	// healthAddr serves the probes (Config.Health, health.listen); empty =
	// none. healthBound is the address bound once Run listens.
	healthAddr  string
	healthBound atomic.Pointer[string]
	// switches are the kill switches by worker (Config.KillSwitches,
	// workers[].kill_switch); pausePoll is Config.PausePoll.
	switches  map[string]killswitch.Config
	pausePoll time.Duration
	// traces is the tracer provider of the configuration's tracing
	// section, shut down (flushed) when Run ends; nil = tracing off.
	traces *sdktrace.TracerProvider
	// endpoints are Config.EndpointStats.
	endpoints map[string]func() *heartbeat.Endpoint
}

// Load reads the configuration file at path and connects to the broker it
// names; cfg's fields override the file's where set. The returned Runtime
// owns the connection: Run closes it.
func Load(ctx context.Context, path string, cfg Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	file, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return fromConfig(ctx, file, cfg)
}

// Parse is Load for configuration bytes.
func Parse(ctx context.Context, yaml []byte, cfg Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	file, err := config.Parse(yaml)
	if err != nil {
		return nil, err
	}
	return fromConfig(ctx, file, cfg)
}

func fromConfig(ctx context.Context, file *config.Config, cfg Config) (*Runtime, error) {
	subs, err := selectWorkers(file, cfg.Workers)
	if err != nil {
		return nil, err
	}
	r := &Runtime{own: true, subs: subs, hb: file.Heartbeat, redisCfg: file.Redis, prefix: file.Redis.Prefix,
		instance: file.Heartbeat.Instance, healthAddr: file.Health.Listen, switches: file.KillSwitches()}
	if cfg.HeartbeatRedis == nil && file.Redis.Configured() {
		// The configuration's Redis: heartbeats, pauses and claims there.
		r.ownRDB = redis.NewClient(&redis.Options{Addr: file.Redis.Addr, Password: file.Redis.Password, DB: file.Redis.DB})
		cfg.HeartbeatRedis = r.ownRDB
	}
	r.apply(cfg)
	file.Heartbeat.Instance = r.instance // the broker names its dead letters alike
	tp, err := tracing.New(ctx, file.Tracing)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if tp != nil {
		r.traces = tp
		for i := range r.subs {
			r.subs[i].TracerProvider = tp
		}
	}
	b, err := assembly.Open(ctx, file, r.log)
	if err != nil {
		r.flushTraces()
		r.closeRedis()
		return nil, err
	}
	r.b = b
	return r, nil
}

// New runs subs on a broker the caller owns (and closes), or returns cfg's
// Validate error.
func New(b broker.Broker, subs []broker.Subscription, cfg Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Runtime{b: b, subs: subs}
	r.apply(cfg)
	return r, nil
}

// apply sets what cfg sets (validated) over what r holds.
func (r *Runtime) apply(cfg Config) {
	r.log = cmp.Or(cfg.Logger, slog.Default())
	r.signal = !cfg.NoSignals
	r.reg = cfg.Registerer
	r.rdb = cfg.HeartbeatRedis
	r.claimsRDB = cmp.Or[redis.Cmdable](cfg.ClaimsRedis, cfg.HeartbeatRedis)
	r.instance = cmp.Or(cfg.Instance, r.instance)
	r.prefix = cmp.Or(cfg.RedisPrefix, r.prefix)
	r.healthAddr = cmp.Or(cfg.Health, r.healthAddr)
	if cfg.HeartbeatInterval > 0 {
		r.hb.Interval = config.Duration(cfg.HeartbeatInterval)
	}
	if cfg.HeartbeatTTL > 0 {
		r.hb.TTL = config.Duration(cfg.HeartbeatTTL)
	}
	if len(cfg.KillSwitches) > 0 {
		if r.switches == nil {
			r.switches = map[string]killswitch.Config{}
		}
		maps.Copy(r.switches, cfg.KillSwitches)
	}
	r.pausePoll = cfg.PausePoll
	r.endpoints = cfg.EndpointStats
}

// Instance returns the name of this worker process (see Config.Instance):
// the configured one, else the broker's, else hostname-pid.
func (r *Runtime) Instance() string {
	if r.instance != "" {
		return r.instance
	}
	if b, ok := r.b.(driver.Instancer); ok && b.InstanceID() != "" {
		return b.InstanceID()
	}
	return driver.DefaultInstance()
}

// HealthAddr returns the address the health probes listen on once Run
// started serving them (Config.Health, health.listen), else "".
func (r *Runtime) HealthAddr() string {
	if p := r.healthBound.Load(); p != nil {
		return *p
	}
	return ""
}

// Broker returns the runtime's broker, to publish with.
func (r *Runtime) Broker() broker.Broker { return r.b }

// Subscriptions returns the configured workers' subscriptions.
func (r *Runtime) Subscriptions() []broker.Subscription { return slices.Clone(r.subs) }

// Run checks that every configured worker has a handler and every handler
// a worker, declares the topology, consumes with every worker until ctx
// ends or the process gets SIGINT/SIGTERM, drains, and (for a runtime from
// Load or Parse) closes the broker and, with tracing enabled, flushes the
// spans it holds. A worker whose Consume fails stops the others and its
// error is returned.
func (r *Runtime) Run(ctx context.Context, handlers Handlers) error {
	defer r.flushTraces()
	defer r.closeRedis()
	if err := r.check(handlers); err != nil {
		if r.own {
			_ = r.b.Close()
		}
		return err
	}
	if r.signal {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	err := r.run(ctx, handlers)
	if r.own {
		if cerr := r.b.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("worker: close broker: %w", cerr)
		}
	}
	return err
}

// closeRedis closes the Redis client Load opened, if any.
func (r *Runtime) closeRedis() {
	if r.ownRDB != nil {
		_ = r.ownRDB.Close()
	}
}

// sayHeartbeats logs at start where the workers' heartbeats go, or that
// there are none and how to have them.
func (r *Runtime) sayHeartbeats() {
	if r.rdb == nil {
		r.log.Info("worker: no heartbeats: the configuration has no redis: section (and worker.Config.HeartbeatRedis is nil); `redrive workers` will not see these workers")
		return
	}
	args := []any{"instance", r.Instance(), "interval", r.hb.Interval.Duration(), "ttl", r.hb.TTL.Duration(), "prefix", r.prefix}
	if r.ownRDB != nil {
		args = append(args, "redis", r.redisCfg.Addr)
	}
	r.log.Info("worker: heartbeats to redis, one key per worker: "+heartbeat.Keys{Prefix: r.prefix}.Heartbeat("{worker}", r.Instance()), args...)
}

func (r *Runtime) run(ctx context.Context, handlers Handlers) error {
	probe, _ := r.b.(driver.Prober) // the backend's capability
	r.sayHeartbeats()
	hs := &health{probe: probe, subs: r.subs}
	if r.healthAddr != "" {
		stop, err := serveHealth(r.healthAddr, hs, &r.healthBound)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := r.b.Declare(ctx, r.subs...); err != nil {
		return fmt.Errorf("worker: declare topology: %w", err)
	}
	var m *metrics
	if r.reg != nil {
		var err error
		if m, err = newMetrics(r.reg); err != nil {
			return err
		}
	}
	subs, err := r.wireClaims()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg, beats sync.WaitGroup
	var pubs []*heartbeat.Publisher
	for _, s := range subs {
		pub, err := r.publisher(s, probe)
		if err != nil {
			return err
		}
		g, err := r.gate(s, pub, m, ctx.Done())
		if err != nil {
			return err
		}
		if g.pauses != nil {
			g.refresh(ctx) // a paused worker takes nothing after a restart
			beats.Go(func() { g.watch(ctx) })
		}
		if pub != nil {
			pubs = append(pubs, pub)
			beats.Go(func() { _ = pub.Run(ctx) }) // writes SHUTTING_DOWN when ctx ends
		}
		h := g.wrap(instrument(s, handlers[s.Group], m, pub))
		wg.Go(func() {
			r.log.Info("worker: consuming", "worker", s.Group, "topic", s.Topic, "policy", s.Policy.String())
			if err := r.b.Consume(ctx, s, h); err != nil {
				hs.loopEnded(s.Group, err)
				cancel(fmt.Errorf("worker %s: %w", s.Group, err))
			}
		})
	}
	<-ctx.Done()
	hs.draining.Store(true) // /readyz answers 503 from now on
	r.log.Info("worker: stopping; draining in-flight messages")
	wg.Wait()
	beats.Wait()
	for _, p := range pubs {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = p.Deregister(dctx) // drained cleanly: the worker leaves the table
		dcancel()
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// flushTraces shuts the tracer provider down, sending the spans it holds
// (within 5 s); nothing without tracing.
func (r *Runtime) flushTraces() {
	if r.traces == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.traces.Shutdown(ctx); err != nil {
		r.log.Warn("worker: flushing traces", "error", err)
	}
}

// gate returns the gate of s's worker: its operator pause (with
// Config.HeartbeatRedis) and its kill switch (when enabled).
func (r *Runtime) gate(s broker.Subscription, pub *heartbeat.Publisher, m *metrics, stopping <-chan struct{}) (*gate, error) {
	var sw *killswitch.Switch
	if cfg, ok := r.switches[s.Group]; ok && cfg.Enabled {
		var err error
		if sw, err = killswitch.New(cfg); err != nil {
			return nil, fmt.Errorf("worker %s: %w", s.Group, err)
		}
	}
	var pauses *heartbeat.Pauses
	if r.rdb != nil {
		pauses = &heartbeat.Pauses{RDB: r.rdb, Keys: heartbeat.Keys{Prefix: r.prefix}}
	}
	var trips prometheus.Counter
	if m != nil && sw != nil {
		trips = m.trips.WithLabelValues(s.Group)
	}
	g := newGate(s, sw, pauses, r.pausePoll, pub, trips, r.log, stopping)
	// The backend's capability (driver.Pauser): while the gate holds,
	// its consumers take nothing from the broker, so that what RabbitMQ
	// prefetched goes back to the queue and Kafka fetches nothing more.
	g.pauser, _ = r.b.(driver.Pauser)
	return g, nil
}

// wireClaims returns the subscriptions to consume with: a copy of the
// runtime's (which Subscriptions may read meanwhile) in which every
// subscription that has max claims and no counter of its own gets the
// runtime's Redis claim counter.
func (r *Runtime) wireClaims() ([]broker.Subscription, error) {
	subs := slices.Clone(r.subs)
	if r.claimsRDB == nil {
		return subs, nil
	}
	cc := claims.Config{Logger: r.log, Prefix: r.prefix}
	if r.reg != nil {
		unavailable, err := register(r.reg, claims.NewUnavailableCounter())
		if err != nil {
			return nil, fmt.Errorf("worker: register claims metric: %w", err)
		}
		cc.Unavailable = unavailable
	}
	c, err := claims.New(r.claimsRDB, cc)
	if err != nil {
		return nil, fmt.Errorf("worker: claims: %w", err)
	}
	for i := range subs {
		if subs[i].MaxClaims > 0 && subs[i].Claims == nil {
			subs[i].Claims = c
		}
	}
	return subs, nil
}

// publisher returns the heartbeat publisher of s's worker, nil without
// Config.HeartbeatRedis. Its beats report the consumer lag probe measures.
func (r *Runtime) publisher(s broker.Subscription, probe driver.Prober) (*heartbeat.Publisher, error) {
	if r.rdb == nil {
		return nil, nil
	}
	cfg := heartbeat.PublisherConfig{
		Type:         s.Group,
		Instance:     r.Instance(),
		Interval:     r.hb.Interval.Duration(),
		TTL:          r.hb.TTL.Duration(),
		MissingAfter: r.hb.MissingAfter.Duration(),
		Prefix:       r.prefix,
		Logger:       r.log,
	}
	if probe != nil {
		cfg.Lag = func(ctx context.Context) (int64, error) { return probe.ConsumerLag(ctx, s.Topic, s.Group) }
	}
	cfg.Endpoint = r.endpoints[s.Group]
	p, err := heartbeat.NewPublisher(r.rdb, cfg)
	if err != nil {
		return nil, fmt.Errorf("worker %s: heartbeat: %w", s.Group, err)
	}
	return p, nil
}

func (r *Runtime) check(handlers Handlers) error {
	var errs []error
	known := map[string]bool{}
	for _, s := range r.subs {
		known[s.Group] = true
		if handlers[s.Group] == nil {
			errs = append(errs, fmt.Errorf("%w: %q", ErrNoHandler, s.Group))
		}
	}
	var extra []string
	for name := range handlers {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		errs = append(errs, fmt.Errorf("%w: %q (configured: %s)", ErrNoWorker, name, strings.Join(slices.Sorted(maps.Keys(known)), ", ")))
	}
	for _, name := range slices.Sorted(maps.Keys(r.switches)) {
		if err := r.switches[name].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("worker %s: kill switch: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
