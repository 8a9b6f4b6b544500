package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/internal/exporter"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "Run the DLQ keeper, the admin API and the exporter in one process",
		help: `Runs, until SIGINT or SIGTERM:

  - the DLQ keeper: it consumes the DLQ of every configured worker
    (RabbitMQ: <topic>.<worker>.dlq; Kafka: <topic>.dlq, one per topic),
    stores each dead letter, counts it and only then acknowledges it;
  - the admin API on admin.listen (--listen overrides it), with the bearer
    token admin.token, else $REDRIVE_ADMIN_TOKEN; without a token it
    refuses to start unless --insecure-no-auth is given and the address is
    loopback;
  - the console on the same address (http://ADDR/): log in with
    admin.token, or read-only with admin.viewer_token;
  - the exporter on exporter.listen (--metrics-listen overrides it):
    /metrics, /healthz, /readyz, as 'redrive exporter' serves them;
  - the background work of the store: reconciling interrupted replays,
    archiving past each DLQ's retention, refreshing redrive_dlq_pending.

The store is PostgreSQL when postgres.url is set. Otherwise it is held in
memory (lost at exit; a warning says so), or journaled to --data FILE,
which also takes precedence over postgres.url.

Serve declares the configured topology (as 'redrive topology apply' does)
so that the DLQs it keeps exist. An unreachable broker or database is
retried with back-off (1s, doubling, up to 30s), logged with its password
masked; meanwhile the exporter already serves and /healthz reads DOWN.`,
		flags: func(fs *flag.FlagSet) action {
			var f serveFlags
			fs.StringVar(&f.listen, "listen", "", "serve the admin API on `ADDR` (host:port), overriding admin.listen")
			fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve the exporter on `ADDR` (host:port), overriding exporter.listen")
			fs.StringVar(&f.data, "data", "", "keep dead letters in the embedded store journaled to `FILE` instead of PostgreSQL or memory")
			fs.BoolVar(&f.insecure, "insecure-no-auth", false, "serve the admin API without a token (loopback addresses only)")
			durationFlag(fs, &f.interval, "sample-interval", "sample every `DURATION` (default: lag 30s, heartbeats and DLQ counts 15s)")
			return func(ctx context.Context, inv *invocation) error { return serve(ctx, inv, f) }
		},
	})
}

type serveFlags struct {
	listen, metricsListen, data string
	insecure                    bool
	interval                    time.Duration
}

// daemon is one `redrive serve` (or the serving half of `redrive dev`).
type daemon struct {
	c        *config.Config
	f        serveFlags
	log      *slog.Logger
	admin    string // listen address of the admin API
	metrics  string // listen address of the exporter
	policies map[string]dlq.Policy
	mon      *monitoring
	exp      *exporter.Server
	pending  *exporter.DLQSampler    // the exporter's DLQ counts
	ops      atomic.Pointer[dlq.Ops] // set once the store and broker are open
}

func serve(ctx context.Context, inv *invocation, f serveFlags) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	if err := tokenFromEnv(c); err != nil {
		return err
	}
	d, err := newDaemon(c, f, daemonLogger(inv.stderr))
	if err != nil {
		return err
	}
	defer d.close()
	return d.run(ctx)
}

// tokenFromEnv sets admin.token from $REDRIVE_ADMIN_TOKEN when the
// configuration leaves it out, as `redrive dev` and the dlq commands read
// it.
func tokenFromEnv(c *config.Config) error {
	tok := os.Getenv("REDRIVE_ADMIN_TOKEN")
	switch {
	case c.Admin.Token != "" || tok == "":
		return nil
	case len(tok) < config.MinTokenLen:
		return usageErrorf("$REDRIVE_ADMIN_TOKEN is shorter than %d characters", config.MinTokenLen)
	case tok == c.Admin.ViewerToken:
		return usageErrorf("$REDRIVE_ADMIN_TOKEN is admin.viewer_token: the operator's token must differ from the viewer's")
	}
	c.Admin.Token = tok
	return nil
}

// newDaemon checks the flags against c and builds the monitoring and the
// exporter; nothing listens or connects yet. close releases it.
func newDaemon(c *config.Config, f serveFlags, log *slog.Logger) (*daemon, error) {
	d := &daemon{c: c, f: f, log: log, policies: keptDLQs(c)}
	if err := d.check(); err != nil {
		return nil, err
	}
	var err error
	if d.mon, err = newMonitoring(c, d.log, f.interval); err != nil {
		return nil, err
	}
	// The pending counts come from the Ops of the running keeper, once
	// there is one; the Ops exports redrive_dlq_pending itself.
	d.pending = exporter.NewDLQSampler(func(ctx context.Context) ([]dlq.DLQInfo, error) {
		if o := d.ops.Load(); o != nil {
			return o.DLQs(ctx)
		}
		return nil, exporter.ErrNotReady
	}, exporter.DLQSamplerConfig{Interval: f.interval, Logger: d.log})
	d.mon.cfg.DLQ = d.pending
	if d.exp, err = exporter.New(d.mon.cfg); err != nil {
		d.mon.close()
		return nil, err
	}
	return d, nil
}

// close releases the monitoring's connections.
func (d *daemon) close() { d.mon.close() }

// run serves the exporter and runs the keeper with the admin API and the
// console until ctx ends.
func (d *daemon) run(ctx context.Context) error {
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

// check validates the flags against the configuration before anything
// connects: bad input exits 2 at once.
func (d *daemon) check() error {
	var err error
	if d.admin, err = listenAddr("--listen", d.f.listen, d.c.Admin.Listen); err != nil {
		return err
	}
	if d.metrics, err = listenAddr("--metrics-listen", d.f.metricsListen, d.c.Exporter.Listen); err != nil {
		return err
	}
	switch {
	case config.SameListen(d.admin, d.metrics):
		return usageErrorf("the admin API and the exporter both listen on %s: give them different addresses (--listen, --metrics-listen)", d.admin)
	case d.f.interval < 0:
		return usageErrorf("--sample-interval %s is negative", d.f.interval)
	case len(d.policies) == 0:
		return usageErrorf("no workers configured: serve keeps the DLQs of the configured workers")
	case d.c.Admin.Token == "" && !d.f.insecure:
		return usageErrorf("no admin token: set admin.token (e.g. token: \"${REDRIVE_ADMIN_TOKEN}\") or $REDRIVE_ADMIN_TOKEN, or pass --insecure-no-auth with a loopback --listen address")
	case d.c.Admin.Token == "" && !admin.IsLoopback(d.admin):
		return usageErrorf("--insecure-no-auth is only allowed on a loopback address, not %s", d.admin)
	}
	return nil
}

// keep opens the store and the broker (retrying while they are
// unreachable), then runs the keeper, the admin API and the store's
// background work until ctx ends.
func (d *daemon) keep(ctx context.Context) error {
	st, err := d.openStore(ctx)
	if err != nil || st == nil {
		return err
	}
	defer st.Close()
	b, err := retry(ctx, d.log, "broker "+d.c.Broker, brokerAddress(d.c), func(ctx context.Context) (broker.Broker, error) {
		return backend.Open(ctx, d.c, d.log)
	}, func(err error) bool {
		return errors.Is(err, backend.ErrNotLinked) || errors.Is(err, rabbit.ErrInvalidConfig) || errors.Is(err, config.ErrInvalid)
	})
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
		return fmt.Errorf("declare the topology of %d workers: %w", len(d.c.Workers), err)
	}
	ops, err := dlq.NewOps(dlq.OpsConfig{Store: st, Republisher: rp, Policies: d.policies,
		Routes: replayRoutes(d.c), MaxPayloadPreview: d.c.DLQ.MaxPayloadPreview,
		Registerer: d.exp.Registerer(), Logger: d.log, MetricsInterval: d.f.interval})
	if err != nil {
		return err
	}
	severities := make(map[string]string, len(d.policies))
	for name, p := range d.policies {
		severities[name] = p.Severity
	}
	keeper, err := dlq.NewKeeper(dlq.KeeperConfig{Source: src, Store: st, Broker: d.c.Broker, DLQs: severities,
		Registerer: d.exp.Registerer(), Logger: d.log})
	if err != nil {
		return err
	}
	api, err := d.adminServer(ops)
	if err != nil {
		return badInput(err)
	}
	d.ops.Store(ops)
	_ = d.pending.Sample(ctx) // the counts are known now; a failure shows in /healthz
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return keeper.Run(gctx) })
	g.Go(func() error { return ops.Run(gctx) })
	g.Go(func() error { return api.ListenAndServe(gctx) })
	d.log.Info("serve: keeping dead letters", "broker", d.c.Broker, "dlqs", len(d.policies), "admin", d.admin)
	return g.Wait()
}

// adminServer returns the admin API with the console on ops: the
// operator logs in with admin.token (the API's bearer token), a viewer with
// admin.viewer_token (read-only).
func (d *daemon) adminServer(ops *dlq.Ops) (*admin.Server, error) {
	var tokens []admin.Token
	var users []console.User
	if d.c.Admin.Token != "" {
		tokens = []admin.Token{{Name: admin.DefaultActor, Secret: d.c.Admin.Token}}
		users = append(users, console.User{Name: admin.DefaultActor, Token: d.c.Admin.Token})
	}
	if d.c.Admin.ViewerToken != "" {
		users = append(users, console.User{Name: "viewer", Token: d.c.Admin.ViewerToken, ReadOnly: true})
	}
	// The console starts replay-all jobs through the API server, which
	// serves the console: ui is filled in once both exist.
	var ui http.Handler
	api, err := admin.New(admin.Config{Ops: ops, Listen: d.admin, Tokens: tokens, InsecureNoAuth: d.f.insecure, Logger: d.log,
		AllowedHosts: d.c.Admin.AllowedHosts,
		UI:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ui.ServeHTTP(w, r) })})
	if err != nil {
		return nil, err
	}
	cons, err := console.New(console.Config{Ops: ops, Jobs: api, Workers: d.mon.heartbeats, Lag: d.mon.lag,
		Broker: d.c.Broker, Users: users, InsecureNoAuth: d.f.insecure, Logger: d.log,
		TrustedProxies: d.c.Admin.Proxies(), CookieSecure: d.c.Admin.CookieSecure})
	if err != nil {
		return nil, err
	}
	ui = cons.Handler()
	return api, nil
}

// openStore opens the DLQ store: the --data journal, else PostgreSQL
// (retried while unreachable), else memory. A nil store with a nil error
// means ctx ended first.
func (d *daemon) openStore(ctx context.Context) (dlq.Store, error) {
	switch {
	case d.f.data != "":
		if d.c.Postgres.URL != "" {
			d.log.Info("serve: --data given; postgres.url is not used", "data", d.f.data)
		}
		st, err := memstore.Open(d.f.data, memstore.Options{Logger: d.log})
		if err != nil {
			return nil, fmt.Errorf("open the DLQ journal: %w", err)
		}
		d.log.Warn("serve: dead letters are kept in the embedded store journaled to a file: one process only, not for production", "data", d.f.data)
		return st, nil
	case d.c.Postgres.URL != "":
		st, err := retry(ctx, d.log, "postgres", pgstore.MaskURL(d.c.Postgres.URL), func(ctx context.Context) (*pgstore.Store, error) {
			return pgstore.Open(ctx, d.c.Postgres.URL, pgstore.Options{Logger: d.log})
		}, nil)
		if err != nil || st == nil {
			return nil, err
		}
		return st, nil
	}
	d.log.Warn("serve: dead letters are held in memory only and are lost when the process exits; set postgres.url, or --data FILE")
	return memstore.New(memstore.Options{Logger: d.log}), nil
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

// keptDLQs returns the DLQs of the configured workers and their policies.
// RabbitMQ: one per worker, "<topic>.<worker>.dlq". Kafka: one per topic,
// "<topic>.dlq", shared by the topic's workers: the most severe severity
// and the longest retention of those workers apply.
func keptDLQs(c *config.Config) map[string]dlq.Policy {
	out := make(map[string]dlq.Policy, len(c.Workers))
	for _, w := range c.Workers {
		w = w.WithDefaults()
		p := dlq.Policy{Severity: w.DLQ.Severity, Retention: w.DLQ.Retention.Value()}
		if c.Broker != config.BrokerKafka {
			out[rabbit.DLQ(rabbit.Queue(w.Topic, w.Name))] = p
			continue
		}
		name := kafka.DLQTopic(w.Topic)
		if prev, ok := out[name]; ok {
			if severityRank(prev.Severity) > severityRank(p.Severity) {
				p.Severity = prev.Severity
			}
			if prev.Retention == broker.Forever || p.Retention != broker.Forever && prev.Retention > p.Retention {
				p.Retention = prev.Retention
			}
		}
		out[name] = p
	}
	return out
}

// replayRoutes returns the replay route of every configured worker: where
// the entries of its DLQ go back to (never where a message says).
func replayRoutes(c *config.Config) []dlq.Route {
	out := make([]dlq.Route, 0, len(c.Workers))
	for _, w := range c.Workers {
		if c.Broker == config.BrokerKafka {
			out = append(out, kafka.Route(w.Topic, w.Name))
		} else {
			out = append(out, rabbit.Route(w.Topic, w.Name))
		}
	}
	return out
}

// severityRank orders DLQ severities: info < warning < critical.
func severityRank(s string) int {
	switch s {
	case dlq.SeverityCritical:
		return 3
	case dlq.SeverityWarning:
		return 2
	case dlq.SeverityInfo:
		return 1
	}
	return 0
}
