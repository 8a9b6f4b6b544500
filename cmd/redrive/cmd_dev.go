package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/internal/devstack"
)

func init() {
	register(&command{
		name:    "dev",
		summary: "Run everything embedded, with sample workers, for a first look",
		help: `Starts, in this one process, with nothing else running:

  - an embedded Kafka (kfake, three brokers on 127.0.0.1), or with
    --broker rabbitmq the RabbitMQ at $RABBITMQ_URL
    (default amqp://guest:guest@127.0.0.1:5672/, prefix redrive-dev);
  - an embedded Redis-protocol server (miniredis) for heartbeats;
  - the sample workers payout-executor, deal-timeout-worker and
    reconciliation-worker with demo-length back-offs, a sample producer
    (--rate messages/s) that makes some messages fail once, some fail for
    good and some panic, reconciliation-worker crashing now and then
    (--crash-every) and deal-timeout-worker stalling for 30s now and then
    (--stall-every): it reads stuck in 'redrive workers' and the console;
  - the DLQ keeper with the in-memory store, the admin API with the
    console, and the exporter, as 'redrive serve' runs them.

It prints where everything is and a short tour, and the token to log in
with (--token, else $REDRIVE_ADMIN_TOKEN, else a random one). The
configuration it runs with is written to a temporary file for the other
commands (redrive workers|lag|dlq ... --config FILE) and removed at exit.
--config is not read. Ctrl-C stops everything; nothing is kept.`,
		flags: func(fs *flag.FlagSet) action {
			var f devFlags
			fs.StringVar(&f.broker, "broker", "kafka", "`BROKER` to run on: kafka (embedded) or rabbitmq ($RABBITMQ_URL)")
			fs.StringVar(&f.listen, "listen", devstack.DefaultAdminListen, "serve the console and admin API on `ADDR`")
			fs.StringVar(&f.metricsListen, "metrics-listen", devstack.DefaultMetricsListen, "serve the exporter on `ADDR`")
			fs.StringVar(&f.token, "token", "", "log in with `TOKEN` (default $REDRIVE_ADMIN_TOKEN, else random)")
			fs.Float64Var(&f.rate, "rate", 5, "publish `N` sample messages per second")
			f.crashEvery = devstack.DefaultCrashEvery
			durationFlag(fs, &f.crashEvery, "crash-every", "crash reconciliation-worker every `DURATION`; 0 = never (default 45s)")
			f.stallEvery = devstack.DefaultStallEvery
			durationFlag(fs, &f.stallEvery, "stall-every", "stall deal-timeout-worker for 30s every `DURATION`; 0 = never (default 3m)")
			return func(ctx context.Context, inv *invocation) error { return dev(ctx, inv, f) }
		},
	})
}

type devFlags struct {
	broker, listen, metricsListen, token string
	rate                                 float64
	crashEvery, stallEvery               time.Duration
}

func (f *devFlags) check() error {
	switch {
	case f.broker != devstack.BrokerKafka && f.broker != devstack.BrokerRabbitMQ:
		return usageErrorf("--broker %q is not kafka or rabbitmq", f.broker)
	case !(f.rate > 0 && f.rate <= 10_000):
		return usageErrorf("--rate %v is not in (0, 10000] messages per second", f.rate)
	case f.crashEvery < 0:
		return usageErrorf("--crash-every %s is negative", f.crashEvery)
	case f.stallEvery < 0:
		return usageErrorf("--stall-every %s is negative", f.stallEvery)
	case f.token != "" && len(f.token) < config.MinTokenLen:
		return usageErrorf("--token is shorter than %d characters", config.MinTokenLen)
	}
	if _, err := listenAddr("--listen", f.listen, ""); err != nil {
		return err
	}
	_, err := listenAddr("--metrics-listen", f.metricsListen, "")
	return err
}

func dev(ctx context.Context, inv *invocation, f devFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	token := f.token
	if token == "" {
		if token = os.Getenv("REDRIVE_ADMIN_TOKEN"); token != "" && len(token) < config.MinTokenLen {
			return usageErrorf("$REDRIVE_ADMIN_TOKEN is shorter than %d characters", config.MinTokenLen)
		}
	}
	if token == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}
	log := daemonLogger(inv.stderr)
	st, err := devstack.Start(devstack.Config{Broker: f.broker, RabbitMQURL: os.Getenv("RABBITMQ_URL"),
		AdminListen: f.listen, MetricsListen: f.metricsListen, Token: token, Logger: log})
	if err != nil {
		return err
	}
	defer st.Close()
	cfgFile, err := writeDevConfig(st.YAML)
	if err != nil {
		return err
	}
	defer os.Remove(cfgFile)

	c := st.Config
	d, err := newDaemon(c, serveFlags{interval: 2 * time.Second}, log)
	if err != nil {
		return err
	}
	defer d.close()
	b, err := backend.Open(ctx, c, log)
	if err != nil {
		return fmt.Errorf("dev: connect the sample workers to %s at %s: %w", c.Broker, brokerAddress(c), err)
	}
	defer b.Close()
	if err := b.Declare(ctx, c.Subscriptions()...); err != nil {
		return fmt.Errorf("dev: declare the sample topology: %w", err)
	}
	rdb := redisClient(c, log)
	defer rdb.Close()
	crashEvery, stallEvery := f.crashEvery, f.stallEvery
	if crashEvery == 0 {
		crashEvery = -1 // never
	}
	if stallEvery == 0 {
		stallEvery = -1 // never
	}
	producer := devstack.NewProducer(b, f.rate, log)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.run(gctx) })
	g.Go(func() error {
		return devstack.RunWorkers(gctx, devstack.WorkersConfig{Broker: b, Subscriptions: c.Subscriptions(), Redis: rdb,
			Registerer: d.exp.Registerer(), HeartbeatInterval: c.Heartbeat.Interval.Duration(), HeartbeatTTL: c.Heartbeat.TTL.Duration(),
			CrashEvery: crashEvery, StallEvery: stallEvery, Logger: log})
	})
	g.Go(func() error { return producer.Run(gctx) })
	printTour(inv.stdout, st, d, cfgFile, token, crashEvery, stallEvery)
	err = g.Wait()
	fmt.Fprintf(inv.stdout, "\nredrive dev: stopped after publishing %d sample messages; nothing was kept.\n", producer.Published())
	return err
}

// writeDevConfig writes the dev configuration (it holds the token) to a
// private temporary file and returns its name.
func writeDevConfig(yaml []byte) (string, error) {
	f, err := os.CreateTemp("", "redrive-dev-*.yaml")
	if err != nil {
		return "", fmt.Errorf("dev: write the configuration: %w", err)
	}
	_, err = f.Write(yaml)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("dev: write the configuration: %w", err)
	}
	return f.Name(), nil
}

// printTour prints where everything is and what to look at.
func printTour(w io.Writer, st *devstack.Stack, d *daemon, cfgFile, token string, crashEvery, stallEvery time.Duration) {
	where := "RabbitMQ at " + brokerAddress(st.Config)
	if brokers := st.KafkaBrokers(); len(brokers) > 0 {
		where = "embedded Kafka (kfake) at " + strings.Join(brokers, ",")
	}
	crash := "reconciliation-worker does not crash (--crash-every 0)"
	if crashEvery > 0 {
		crash = fmt.Sprintf("reconciliation-worker crashes every %s: its heartbeat stops and it reads missing (CRITICAL) until it is back", crashEvery)
	}
	stall := "deal-timeout-worker does not stall (--stall-every 0)"
	if stallEvery > 0 {
		stall = fmt.Sprintf("deal-timeout-worker stalls for %s every %s: messages wait, and once heartbeat.idle_after passed it reads stuck (WARNING) with its lag",
			devstack.DefaultStallFor, stallEvery)
	}
	self := filepath.Base(os.Args[0])
	fmt.Fprintf(w, `redrive dev: everything runs in this process; Ctrl-C stops it and nothing is kept.

  broker      %s
  redis       embedded (miniredis) at %s
  dlq store   in memory

  console     http://%s/            log in with the token %s
  admin API   http://%s/internal/v1/dlq   (Authorization: Bearer %s)
  metrics     http://%s/metrics
  config      %s

A short tour:
  1. Open the console and log in. Within seconds dead letters arrive in
     escrow.commands, deal.deadlines and reconciliation.triggers: some
     messages fail for good, some exhaust their retries.
  2. Open a dead letter: its payload, headers, error and retry history.
     Replay it, or discard it with a reason; the audit trail shows who did what.
  3. Watch retries: curl -s http://%s/metrics | grep -E 'worker_retry_total|worker_dlq_messages_total'
  4. Workers (console, Workers page): %s;
     %s.
  5. The CLI sees the same: %s workers --config %s   (or lag, dlq ls)
`, where, st.RedisAddr(), d.admin, token, d.admin, token, d.metrics, cfgFile, d.metrics, crash, stall, self, cfgFile)
}
