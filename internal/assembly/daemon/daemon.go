// Package daemon assembles what `redrive serve` and `redrive exporter`
// run from a loaded configuration: the exporter with its samplers (lag,
// heartbeats, dead letters pending), the broker and the store (retried
// while unreachable), the keeper, operate.Ops, the replay-all jobs the admin
// API and the console share, and the clients of the configured services.
// cmd/redrive only parses flags and calls it.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/access"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/exporter"
)

// Options are the flags of `redrive serve` (the names in the errors of
// New are theirs).
type Options struct {
	// Listen overrides admin.listen (--listen).
	Listen string
	// MetricsListen overrides exporter.listen (--metrics-listen).
	MetricsListen string
	// Data keeps dead letters in the embedded store journaled to this
	// file instead of PostgreSQL or memory (--data).
	Data string
	// InsecureNoAuth serves the admin API without a token, on a loopback
	// address only (--insecure-no-auth).
	InsecureNoAuth bool
	// Interval, when positive, replaces the samplers' default intervals
	// (--sample-interval).
	Interval time.Duration
}

// Daemon is one `redrive serve` (or the serving half of `redrive dev`):
// the exporter, and the keeper with the admin API, the console and the
// store's background work.
type Daemon struct {
	c        *config.Config
	o        Options
	router   dlq.Router // the backend's DLQ names and replay routes
	log      *slog.Logger
	admin    string // listen address of the admin API
	metrics  string // listen address of the exporter
	policies map[string]dlq.Policy
	mon      *monitoring
	exp      *exporter.Server
	pending  *exporter.DLQSampler        // the exporter's DLQ counts
	ops      atomic.Pointer[operate.Ops] // set once the store and broker are open
}

// New checks o against c and builds the monitoring and the exporter;
// nothing listens or connects yet. Close releases it. Bad options or
// configuration match ErrInvalid.
func New(c *config.Config, o Options, log *slog.Logger) (*Daemon, error) {
	if log == nil {
		log = slog.Default()
	}
	router, err := assembly.Router(c)
	if err != nil {
		return nil, err
	}
	d := &Daemon{c: c, o: o, log: log, router: router, policies: keptDLQs(c, router)}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.mon, err = newMonitoring(context.Background(), c, d.log, o.Interval); err != nil {
		return nil, err
	}
	// The pending counts come from the Ops of the running keeper, once
	// there is one; the Ops exports redrive_dlq_pending itself.
	d.pending = exporter.NewDLQSampler(func(ctx context.Context) ([]operate.DLQInfo, error) {
		if o := d.ops.Load(); o != nil {
			return o.DLQs(ctx)
		}
		return nil, exporter.ErrNotReady
	}, exporter.DLQSamplerConfig{Interval: o.Interval, Logger: d.log})
	d.mon.cfg.DLQ = d.pending
	if d.exp, err = exporter.New(d.mon.cfg); err != nil {
		d.mon.close()
		return nil, err
	}
	return d, nil
}

// Close releases the monitoring's connections.
func (d *Daemon) Close() { d.mon.close() }

// AdminAddr is the address the admin API and the console listen on.
func (d *Daemon) AdminAddr() string { return d.admin }

// MetricsAddr is the address the exporter listens on.
func (d *Daemon) MetricsAddr() string { return d.metrics }

// Registerer is the exporter's registry: collectors registered with it are
// served on /metrics.
func (d *Daemon) Registerer() prometheus.Registerer { return d.exp.Registerer() }

// Run serves the exporter and runs the keeper with the admin API and the
// console until ctx ends.
func (d *Daemon) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		ln, err := listenTCP(gctx, d.metrics)
		if err != nil {
			return fmt.Errorf("exporter: %w", err)
		}
		return d.exp.Serve(gctx, ln)
	})
	g.Go(func() error { return d.keep(gctx) })
	return g.Wait()
}

// check validates the options against the configuration before anything
// connects: bad input exits 2 at once.
func (d *Daemon) check() error {
	var err error
	if d.admin, err = ListenAddr("--listen", d.o.Listen, d.c.Admin.Listen); err != nil {
		return err
	}
	if d.metrics, err = ListenAddr("--metrics-listen", d.o.MetricsListen, d.c.Exporter.Listen); err != nil {
		return err
	}
	switch {
	case config.SameListen(d.admin, d.metrics):
		return invalidf("the admin API and the exporter both listen on %s: give them different addresses (--listen, --metrics-listen)", d.admin)
	case d.o.Interval < 0:
		return invalidf("--sample-interval %s is negative", d.o.Interval)
	case len(d.policies) == 0:
		return invalidf("no workers configured: serve keeps the DLQs of the configured workers (and the foreign_dlqs of the broker's section)")
	case !d.c.Admin.HasCredentials() && !d.o.InsecureNoAuth:
		return invalidf("no admin token: set admin.operators (tokens of your operators, by their hashes: redrive admin hash-token), admin.proxy_auth, or admin.token (e.g. token: \"${REDRIVE_ADMIN_TOKEN}\") or $REDRIVE_ADMIN_TOKEN; or pass --insecure-no-auth with a loopback --listen address")
	case !d.c.Admin.HasCredentials() && !admin.IsLoopback(d.admin):
		return invalidf("--insecure-no-auth is only allowed on a loopback address, not %s", d.admin)
	}
	return nil
}

// keep opens the store and the broker (retrying while they are
// unreachable), then runs the keeper, the admin API and the store's
// background work until ctx ends.
func (d *Daemon) keep(ctx context.Context) error {
	st, err := d.openStore(ctx)
	if err != nil || st == nil {
		return err
	}
	defer st.Close()
	b, err := retry(ctx, d.log, "broker "+d.c.Broker, BrokerAddress(d.c), func(ctx context.Context) (broker.Broker, error) {
		return assembly.Open(ctx, d.c, d.log)
	}, badInput)
	if err != nil || b == nil {
		return err
	}
	defer b.Close()
	src, ok := b.(dlq.Source)
	if !ok {
		return fmt.Errorf("broker %s cannot be kept: its backend does not read dead-letter queues (dlq.Source)", d.c.Broker)
	}
	rp, ok := b.(dlq.Republisher)
	if !ok {
		return fmt.Errorf("broker %s cannot be kept: its backend cannot replay dead letters (dlq.Republisher)", d.c.Broker)
	}
	if err := b.Declare(ctx, d.c.Subscriptions()...); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting (Ctrl-C): a clean stop, as in retry
		}
		return fmt.Errorf("declare the topology of %d workers: %w", len(d.c.Workers), err)
	}
	ops, err := operate.New(operate.Config{Store: st, Republisher: rp, Policies: d.policies,
		Routes: replayRoutes(d.c, d.router), MaxPayloadPreview: d.c.DLQ.MaxPayloadPreview,
		Registerer: d.exp.Registerer(), Logger: d.log, MetricsInterval: d.o.Interval})
	if err != nil {
		return err
	}
	severities := make(map[string]broker.Severity, len(d.policies))
	for name, p := range d.policies {
		severities[name] = p.Severity
	}
	keeper, err := keeper.New(keeper.Config{Source: src, Store: st, Broker: d.c.Broker, DLQs: severities,
		Registerer: d.exp.Registerer(), Ops: ops, Logger: d.log})
	if err != nil {
		return err
	}
	api, err := d.adminServer(ops, st)
	if err != nil {
		return invalid(err)
	}
	d.ops.Store(ops)
	_ = d.pending.Sample(ctx) // the counts are known now; a failure shows in /healthz
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return keeper.Run(gctx) })
	g.Go(func() error { return ops.Run(gctx) })
	g.Go(func() error { return api.ListenAndServe(gctx) })
	g.Go(func() error { return d.effects(gctx, b) })
	d.log.Info("serve: keeping dead letters", "broker", d.c.Broker, "dlqs", len(d.policies), "admin", d.admin)
	return g.Wait()
}

// adminServer returns the admin API with the console on ops, both with one
// access.Authenticator of the admin section (config.Admin.Access): the
// named operators and viewers of admin.operators, the people
// admin.proxy_auth's proxy vouches for, and the single admin.token
// ("admin") and admin.viewer_token ("viewer") of older configurations.
//
// With PostgreSQL the replay-all jobs are kept in it, shared by every
// replica (see jobs.Config.Store); otherwise in this process's memory.
func (d *Daemon) adminServer(ops *operate.Ops, st dlq.Store) (*admin.Server, error) {
	var jobStore dlq.JobStore
	if pg, ok := st.(*pgstore.Store); ok {
		jobStore = pg.Jobs()
	}
	acc, err := access.New(d.c.Admin.Access())
	if err != nil {
		return nil, err
	}
	// The console and the API share the replay-all jobs; the API serves the
	// console and closes the jobs when it stops.
	jobs, err := jobs.New(jobs.Config{Ops: ops, Store: jobStore, Replica: d.c.DLQ.Replica,
		Lease: time.Duration(d.c.DLQ.JobLease), Logger: d.log})
	if err != nil {
		return nil, err
	}
	var lagSource console.LagSource // nil, not a nil *lag.Sampler, without one
	if d.mon.lag != nil {
		lagSource = d.mon.lag
	}
	cons, err := console.New(console.Config{Ops: ops, Jobs: jobs, Workers: d.mon.heartbeats, Pauser: d.mon.pauses, Lag: lagSource,
		Broker: d.c.Broker, Access: acc, InsecureNoAuth: d.o.InsecureNoAuth, Logger: d.log,
		TrustedProxies: d.c.Admin.Proxies(), CookieSecure: d.c.Admin.CookieSecure, TraceLink: d.c.Console.TraceLink,
		SessionSecret: d.c.Admin.SessionSecret})
	if err != nil {
		jobs.Close()
		return nil, err
	}
	api, err := admin.New(admin.Config{Ops: ops, Jobs: jobs, Listen: d.admin, Access: acc, InsecureNoAuth: d.o.InsecureNoAuth, Logger: d.log,
		AllowedHosts: d.c.Admin.AllowedHosts, Workers: d.mon.pauses, UI: cons.Handler()})
	if err != nil {
		jobs.Close()
		return nil, err
	}
	return api, nil
}

// openStore opens the DLQ store: the --data journal, else PostgreSQL
// (retried while unreachable), else memory. A nil store with a nil error
// means ctx ended first.
func (d *Daemon) openStore(ctx context.Context) (dlq.Store, error) {
	switch {
	case d.o.Data != "":
		if d.c.Postgres.URL != "" {
			d.log.Info("serve: --data given; postgres.url is not used", "data", d.o.Data)
		}
		st, err := memstore.Open(d.o.Data, memstore.Config{Logger: d.log})
		if err != nil {
			return nil, fmt.Errorf("open the DLQ journal: %w", err)
		}
		d.log.Warn("serve: dead letters are kept in the embedded store journaled to a file: one process only, not for production", "data", d.o.Data)
		return st, nil
	case d.c.Postgres.URL != "":
		st, err := retry(ctx, d.log, "postgres", pgstore.MaskURL(d.c.Postgres.URL), func(ctx context.Context) (*pgstore.Store, error) {
			return pgstore.Open(ctx, d.c.Postgres.URL, pgstore.Config{Logger: d.log})
		}, nil)
		if err != nil || st == nil {
			return nil, err
		}
		return st, nil
	}
	d.log.Warn("serve: dead letters are held in memory only and are lost when the process exits; set postgres.url, or --data FILE")
	return memstore.New(memstore.Config{Logger: d.log}), nil
}

// Back-off between attempts to reach a broker or database.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// retry calls open until it succeeds, fails for good (permanent, when set,
// says so), or ctx ends (then it returns zero values and no error). Each
// failure is logged as a warning naming what and where (secrets masked),
// and the wait doubles from 1 s up to 30 s.
func retry[T any](ctx context.Context, log *slog.Logger, what, where string, open func(context.Context) (T, error), permanent func(error) bool) (T, error) {
	var zero T
	wait := retryFirst
	for {
		v, err := open(ctx)
		switch {
		case err == nil:
			return v, nil
		case ctx.Err() != nil:
			return zero, nil
		case permanent != nil && permanent(err):
			return zero, err
		}
		log.Warn("serve: "+what+" unreachable; retrying", "at", where, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return zero, nil
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}
