package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/lag"
)

// ExporterOptions are the flags of `redrive exporter`.
type ExporterOptions struct {
	// Listen overrides exporter.listen (--listen).
	Listen string
	// Interval, when positive, replaces the samplers' default intervals
	// (--sample-interval).
	Interval time.Duration
}

// RunExporter serves the exporter alone, until ctx ends: lag, heartbeats
// and, when postgres.url is set, the dead letters pending per DLQ. Bad
// options or configuration match ErrInvalid.
func RunExporter(ctx context.Context, c *config.Config, o ExporterOptions, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	listen, err := ListenAddr("--listen", o.Listen, c.Exporter.Listen)
	if err != nil {
		return err
	}
	if o.Interval < 0 {
		return invalidf("--sample-interval %s is negative", o.Interval)
	}
	m, err := newMonitoring(ctx, c, log, o.Interval)
	if err != nil {
		return err
	}
	defer m.close()
	if c.Postgres.URL != "" {
		router, err := assembly.Router(c)
		if err != nil {
			return err
		}
		counts := &storeCounts{url: c.Postgres.URL, policies: keptDLQs(c, router), log: log}
		m.closers = append(m.closers, counts.Close)
		ds := exporter.NewDLQSampler(counts.DLQs, exporter.DLQSamplerConfig{Interval: o.Interval, Logger: log})
		m.cfg.DLQ = ds
		m.cfg.Collectors = append(m.cfg.Collectors, ds) // no operate.Ops exports redrive_dlq_pending here
	}
	srv, err := exporter.New(m.cfg)
	if err != nil {
		return err
	}
	ln, err := listenTCP(ctx, listen)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	return srv.Serve(ctx, ln)
}

// listenTCP binds addr.
func listenTCP(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// ListenAddr returns flagValue, else configured, checked as host:port.
func ListenAddr(flagName, flagValue, configured string) (string, error) {
	addr := configured
	if flagValue != "" {
		addr = flagValue
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return "", invalidf("%s %q is not host:port", flagName, addr)
	}
	return addr, nil
}

// monitoring is what the exporter samples, built from the configuration:
// the lag of the configured broker and the heartbeats in Redis.
type monitoring struct {
	cfg        exporter.Config
	lag        *lag.Sampler       // also in cfg, for the console
	heartbeats *heartbeat.Sampler // also in cfg, for the console
	pauses     heartbeat.Pauses   // operator pauses, for the admin API and the console
	closers    []func() error
}

// newMonitoring builds the lag and heartbeat samplers of c; interval, when
// positive, replaces the samplers' default intervals.
func newMonitoring(ctx context.Context, c *config.Config, log *slog.Logger, interval time.Duration) (*monitoring, error) {
	m := &monitoring{cfg: exporter.Config{Broker: c.Broker, Thresholds: LagThresholds(c), Logger: log}}
	ok := false
	defer func() {
		if !ok {
			m.close()
		}
	}()
	lagMon, err := assembly.Monitor(ctx, c, log)
	switch {
	case errors.Is(err, driver.ErrNoCapability):
		// A backend that measures no lag (no driver.Monitor): the
		// exporter and the console have no lag component.
		log.Info("lag: the backend measures no lag; no lag metrics", "broker", c.Broker)
	case err != nil:
		if badInput(err) {
			return nil, invalid(err)
		}
		return nil, fmt.Errorf("lag of %s at %s: %w", c.Broker, BrokerAddress(c), err)
	default:
		m.closers = append(m.closers, lagMon.Close)
		lc := lag.SamplerConfig{Interval: interval, Logger: log, Monitor: lagMon, Source: c.Broker}
		if lc.Tracker, err = lag.NewTracker(lag.TrackerConfig{Thresholds: LagThresholds(c)}); err != nil {
			return nil, invalid(err)
		}
		for _, w := range c.Workers {
			m.cfg.Groups = append(m.cfg.Groups, exporter.Group{Group: w.Name, Topic: w.Topic})
		}
		s, err := lag.NewSampler(lc)
		if err != nil {
			return nil, err
		}
		m.cfg.Lag = s
		m.lag = s
	}

	rdb := RedisClient(c, log)
	m.closers = append(m.closers, rdb.Close)
	mon, err := HeartbeatMonitor(c, rdb, log)
	if err != nil {
		return nil, invalid(err)
	}
	if m.heartbeats, err = heartbeat.NewSampler(mon, heartbeat.SamplerConfig{Interval: interval, Logger: log, Workers: configuredWorkers(c)}); err != nil {
		return nil, invalid(err)
	}
	m.pauses = heartbeat.Pauses{RDB: rdb, Keys: HeartbeatKeys(c)}
	m.cfg.Heartbeats = m.heartbeats
	ok = true
	return m, nil
}

// close releases the connections, last opened first.
func (m *monitoring) close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		_ = m.closers[i]()
	}
	m.closers = nil
}

// heartbeatMonitor is the monitor of the configured heartbeat thresholds;
// each worker type is graded on the lag thresholds of its topic.
func HeartbeatMonitor(c *config.Config, rdb redis.Cmdable, log *slog.Logger) (*heartbeat.Monitor, error) {
	return heartbeat.NewMonitor(rdb, HeartbeatMonitorConfig(c, log))
}

// HeartbeatMonitorConfig is the monitor configuration of c: its
// heartbeat thresholds, prefix and limit; each worker type is graded on
// the lag thresholds of its topic.
func HeartbeatMonitorConfig(c *config.Config, log *slog.Logger) heartbeat.MonitorConfig {
	th := map[string]heartbeat.LagThreshold{}
	for _, w := range c.Workers {
		if t, ok := c.Lag.Thresholds[w.Topic]; ok {
			th[w.Name] = heartbeat.LagThreshold{Warning: t.Warning, Critical: t.Critical}
		}
	}
	return heartbeat.MonitorConfig{
		Prefix:             c.Redis.Prefix,
		MissingAfter:       c.Heartbeat.MissingAfter.Duration(),
		IdleAfter:          c.Heartbeat.IdleAfter.Duration(),
		ShutdownStuckAfter: c.Heartbeat.ShutdownStuckAfter.Duration(),
		LagThresholds:      th,
		Workers:            WorkerNames(c),
		MaxInstances:       c.Heartbeat.MaxInstances,
		Logger:             log,
	}
}

// HeartbeatKeys names the heartbeat keys of c's Redis (redis.prefix).
func HeartbeatKeys(c *config.Config) heartbeat.Keys {
	return heartbeat.Keys{Prefix: c.Redis.Prefix}
}

// lagThresholds converts lag.thresholds.
func LagThresholds(c *config.Config) lag.Thresholds {
	out := make(lag.Thresholds, len(c.Lag.Thresholds))
	for topic, t := range c.Lag.Thresholds {
		out[topic] = lag.Threshold{Warning: t.Warning, Critical: t.Critical}
	}
	return out
}

// configuredWorkers lists the configured worker types with the severity
// of their dead letters, for redrive_worker_running_instances.
func configuredWorkers(c *config.Config) []heartbeat.Worker {
	out := make([]heartbeat.Worker, 0, len(c.Workers))
	for _, w := range c.Workers {
		out = append(out, heartbeat.Worker{Type: w.Name, DLQSeverity: string(w.WithDefaults().DLQ.Severity)})
	}
	return out
}

// workerNames lists the configured workers' names: their consumer groups.
func WorkerNames(c *config.Config) []string {
	out := make([]string, 0, len(c.Workers))
	for _, w := range c.Workers {
		out = append(out, w.Name)
	}
	return out
}

// storeCounts lists the DLQs of a PostgreSQL store that it opens on first
// use, and again on every call until it could: the exporter serves (and
// reports the counts as unreadable) while the database is down.
type storeCounts struct {
	url      string
	policies map[string]dlq.Policy
	log      *slog.Logger

	mu    sync.Mutex
	store *pgstore.Store
	ops   *operate.Ops
}

// DLQs implements exporter.DLQLister.
func (s *storeCounts) DLQs(ctx context.Context) ([]operate.DLQInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ops == nil {
		st, err := pgstore.Open(ctx, s.url, pgstore.Config{MaxConns: 2, Logger: s.log})
		if err != nil {
			return nil, err
		}
		ops, err := operate.New(operate.Config{Store: st, Policies: s.policies, Logger: s.log})
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		s.store, s.ops = st, ops
	}
	return s.ops.DLQs(ctx)
}

// Close closes the store when it was opened.
func (s *storeCounts) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		return nil
	}
	return s.store.Close()
}
