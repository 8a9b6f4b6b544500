package main

import (
	"context"

	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/spf13/cobra"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/daemon"
	"github.com/redrive/redrive/internal/tools/devstack"
)

func newDevCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything embedded, with sample workers, for a first look",
		Long: `Starts, in this one process, with nothing else running:

  - an embedded Kafka (kfake, three brokers on 127.0.0.1), or with
    --broker rabbitmq the RabbitMQ at $RABBITMQ_URL
    (default amqp://guest:guest@127.0.0.1:5672/), or with --broker memory
    the in-memory broker, which lives in this process;
  - an embedded Redis-protocol server (miniredis) for heartbeats;
  - the sample workers payout-executor, deal-timeout-worker and
    reconciliation-worker with demo-length back-offs, a sample producer
    (--rate messages/s; 0 = none) that makes some messages fail once, some
    fail for good and some panic, reconciliation-worker crashing now and
    then (--crash-every) and deal-timeout-worker stalling for 30s now and
    then (--stall-every): it reads stuck in 'redrive workers' and the
    console;
  - the DLQ keeper with the in-memory store, the admin API with the
    console, and the exporter, as 'redrive serve' runs them.

It prints where everything is and a short tour, and the token to log in
with (--token, else $REDRIVE_ADMIN_TOKEN, else a random one). The
configuration it runs with is written to a temporary file for the other
commands (redrive workers|lag|dlq ... --config FILE) and removed at exit.
--config is not read. Ctrl-C stops everything.

On RabbitMQ every name it declares starts with --prefix (default
redrive-dev): its exchanges, delay queues and sample topics
(redrive-dev.escrow.commands, hence the queue
redrive-dev.escrow.commands.payout-executor), so it never shares a queue
with your own configuration or the tests. It refuses to start while another
'redrive dev' consumes the same prefix. At exit it deletes every exchange
and queue it declared, with their messages; --keep keeps them (and says
which, with their messages) for the next run to take over. The dead
letters in the in-memory store are gone either way. On Kafka the embedded
cluster is gone at exit.

--no-samples runs only the embedded Kafka (on 127.0.0.1, ports
--kafka-port to --kafka-port+2, default 9092) and Redis for a program of
your own, and prints a configuration for it (redrive.yaml); run
'redrive serve' with that configuration for the keeper, the admin API and
the console.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dev(cmd.Context(), newInvocation(cmd, args), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.broker, "broker", devstack.DefaultBroker, "`BROKER` to run on: "+strings.Join(devstack.Brokers(), ", ")+
		" (kafka embedded, rabbitmq at $RABBITMQ_URL, memory in this process)")
	fs.StringVar(&f.listen, "listen", devstack.DefaultAdminListen, "serve the console and admin API on `ADDR`")
	fs.StringVar(&f.metricsListen, "metrics-listen", devstack.DefaultMetricsListen, "serve the exporter on `ADDR`")
	fs.StringVar(&f.token, "token", "", "log in with `TOKEN` (default $REDRIVE_ADMIN_TOKEN, else random)")
	fs.Float64Var(&f.rate, "rate", 5, "publish `N` sample messages per second; 0 = no sample traffic")
	fs.DurationVar(&f.crashEvery, "crash-every", devstack.DefaultCrashEvery, "crash reconciliation-worker every `DURATION`; 0 = never")
	fs.DurationVar(&f.stallEvery, "stall-every", devstack.DefaultStallEvery, "stall deal-timeout-worker for 30s every `DURATION`; 0 = never")
	fs.DurationVar(&f.outageEvery, "outage-every", devstack.DefaultOutageEvery, "take payout-executor's downstream down for 40s every `DURATION` (its kill switch pauses it); 0 = never")
	fs.StringVar(&f.prefix, "prefix", devstack.DefaultPrefix, "start every name declared on RabbitMQ with `PREFIX`")
	fs.BoolVar(&f.keep, "keep", false, "keep the exchanges and queues declared on RabbitMQ at exit")
	fs.BoolVar(&f.noSamples, "no-samples", false, "run only the embedded Kafka and Redis, for your own program")
	fs.Func("kafka-port", "first `PORT` of the embedded Kafka brokers; 0 = random (default 9092 with --no-samples, else random)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q is not a port number", s)
		}
		f.kafkaPort, f.kafkaPortSet = n, true
		return nil
	})
	_ = cmd.RegisterFlagCompletionFunc("broker", cobra.FixedCompletions(devstack.Brokers(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

type devFlags struct {
	broker, listen, metricsListen, token, prefix string
	rate                                         float64
	crashEvery, stallEvery, outageEvery          time.Duration
	keep, noSamples, kafkaPortSet                bool
	kafkaPort                                    int
}

func (f *devFlags) check() error {
	if !f.kafkaPortSet && f.noSamples && devstack.Embedded(f.broker) {
		f.kafkaPort = devstack.DefaultKafkaPort
	}
	switch {
	case !slices.Contains(devstack.Brokers(), f.broker):
		return usageErrorf("--broker %q is not %s", f.broker, strings.Join(devstack.Brokers(), " or "))
	case !(f.rate >= 0 && f.rate <= 10_000):
		return usageErrorf("--rate %v is not in [0, 10000] messages per second", f.rate)
	case f.kafkaPort < 0 || f.kafkaPort > 65535-devstack.KafkaBrokers+1:
		return usageErrorf("--kafka-port %d is not in [0, %d]", f.kafkaPort, 65535-devstack.KafkaBrokers+1)
	case f.kafkaPort > 0 && !devstack.Embedded(f.broker):
		return usageErrorf("--kafka-port is for the embedded Kafka (--broker kafka)")
	case !devstack.ValidPrefix(f.prefix):
		return usageErrorf("--prefix %q is not 1 to 100 characters of [a-zA-Z0-9_-]", f.prefix)
	case f.crashEvery < 0:
		return usageErrorf("--crash-every %s is negative", f.crashEvery)
	case f.stallEvery < 0:
		return usageErrorf("--stall-every %s is negative", f.stallEvery)
	case f.outageEvery < 0:
		return usageErrorf("--outage-every %s is negative", f.outageEvery)
	case f.token != "" && config.TokenProblem(f.token) != "":
		return usageErrorf("--token: %s", config.TokenProblem(f.token))
	}
	if _, err := daemon.ListenAddr("--listen", f.listen, ""); err != nil {
		return daemonError(err)
	}
	_, err := daemon.ListenAddr("--metrics-listen", f.metricsListen, "")
	return daemonError(err)
}

func dev(ctx context.Context, inv *invocation, f devFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	token := f.token
	if token == "" {
		token = os.Getenv("REDRIVE_ADMIN_TOKEN")
		if msg := config.TokenProblem(token); token != "" && msg != "" {
			return usageErrorf("$REDRIVE_ADMIN_TOKEN: %s", msg)
		}
	}
	if token == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}
	log := daemonLogger(inv.stderr)
	st, err := devstack.Start(devstack.Config{Broker: f.broker, RabbitMQURL: os.Getenv("RABBITMQ_URL"), Prefix: f.prefix,
		KafkaPort: f.kafkaPort, AdminListen: f.listen, MetricsListen: f.metricsListen, Token: token, Logger: log})
	if err != nil {
		return err
	}
	defer st.Close()
	if f.noSamples && !st.Reachable() {
		return usageErrorf("--no-samples runs a broker for a program of yours, but the %s lives in this process: no other program reaches it", st.BrokerName())
	}
	if f.noSamples {
		return devNoSamples(ctx, inv, st)
	}
	left, err := st.CheckRabbitMQ(ctx)
	if err != nil {
		return err
	}
	cfgFile, err := writeDevConfig(st.YAML)
	if err != nil {
		return err
	}
	defer os.Remove(cfgFile)

	c := st.Config
	d, err := daemon.New(c, daemon.Options{Interval: 2 * time.Second}, log)
	if err != nil {
		return err
	}
	defer d.Close()
	b, err := assembly.Open(ctx, c, log)
	if err != nil {
		return fmt.Errorf("dev: connect the sample workers to %s at %s: %w", c.Broker, daemon.BrokerAddress(c), err)
	}
	defer b.Close()
	if err := b.Declare(ctx, c.Subscriptions()...); err != nil {
		return fmt.Errorf("dev: declare the sample topology: %w", err)
	}
	rdb := daemon.RedisClient(c, log)
	defer rdb.Close()
	crashEvery, stallEvery := f.crashEvery, f.stallEvery
	if crashEvery == 0 {
		crashEvery = -1 // never
	}
	if stallEvery == 0 {
		stallEvery = -1 // never
	}
	outageEvery := f.outageEvery
	if outageEvery == 0 {
		outageEvery = -1 // never
	}
	producer := st.NewProducer(b, f.rate, log)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.Run(gctx) })
	g.Go(func() error {
		return devstack.RunWorkers(gctx, devstack.WorkersConfig{Broker: b, Subscriptions: c.Subscriptions(), Redis: rdb,
			Registerer: d.Registerer(), HeartbeatInterval: c.Heartbeat.Interval.Duration(), HeartbeatTTL: c.Heartbeat.TTL.Duration(),
			CrashEvery: crashEvery, StallEvery: stallEvery, OutageEvery: outageEvery, KillSwitches: c.KillSwitches(), Logger: log})
	})
	if f.rate > 0 {
		g.Go(func() error { return producer.Run(gctx) })
	}
	printTour(inv.stdout, st, d, cfgFile, token, crashEvery, stallEvery, outageEvery, f.rate)
	if left.Messages > 0 {
		fmt.Fprintf(inv.stdout, "\nNote: an earlier run kept (--keep) or left behind %d messages, handled now: %s\n", left.Messages, left)
	}
	err = g.Wait()
	fmt.Fprintf(inv.stdout, "\nredrive dev: stopped after publishing %d sample messages; %s\n", producer.Published(), devGoodbye(st, f.keep))
	return err
}

// devGoodbye cleans up RabbitMQ (unless keep) and says what is left.
func devGoodbye(st *devstack.Stack, keep bool) string {
	const gone = "the dead letters of the in-memory store are gone."
	if devstack.Embedded(st.Config.Broker) {
		return "the embedded " + st.BrokerName() + ", Redis and store are gone: nothing was kept."
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	said, err := st.Teardown(ctx, keep)
	if err != nil {
		return err.Error() + "; " + gone
	}
	return said + " " + strings.ToUpper(gone[:1]) + gone[1:]
}

// devNoSamples runs the embedded Kafka and Redis for the user's own
// program until ctx ends, printing a configuration for it.
func devNoSamples(ctx context.Context, inv *invocation, st *devstack.Stack) error {
	where := st.Where()
	if !devstack.Embedded(st.Config.Broker) {
		where += " (yours: nothing is declared)"
	}
	self := selfPath()
	fmt.Fprintf(inv.stdout, `redrive dev --no-samples: for your own program; no sample workers, no sample traffic.
Ctrl-C stops it; the embedded servers and their data are gone at exit.

  broker      %s
  redis       embedded (miniredis) at %s

A configuration for your program (save it as redrive.yaml; the Kafka quick
start's default brokers 127.0.0.1:9092 are these):

%s
Then, in other terminals: run your program; export REDRIVE_ADMIN_TOKEN (8+
characters) and run %s serve --config redrive.yaml (the keeper, the admin
API and the console on http://127.0.0.1:8080/); list dead letters with
%s dlq ls --config redrive.yaml
`, where, st.RedisAddr(), indentLines(string(st.ProgramYAML()), "    "), self, self)
	<-ctx.Done()
	fmt.Fprintln(inv.stdout, "\nredrive dev: stopped; the embedded Kafka and Redis are gone: nothing was kept.")
	return nil
}

// indentLines prefixes every non-empty line of s with prefix.
func indentLines(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// selfPath is how to run this redrive again from the current directory:
// "redrive" when that is what $PATH finds, else the path relative to the
// working directory when the binary is below it (bin/redrive), else its
// absolute path.
func selfPath() string {
	exe, err := os.Executable()
	if err != nil {
		return "redrive"
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "redrive"
	}
	if onPath, err := exec.LookPath("redrive"); err == nil {
		if p, err := filepath.EvalSymlinks(onPath); err == nil && p == exe {
			return "redrive"
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return exe
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
func printTour(w io.Writer, st *devstack.Stack, d *daemon.Daemon, cfgFile, token string, crashEvery, stallEvery, outageEvery time.Duration, rate float64) {
	where := st.Where()
	crash := "reconciliation-worker does not crash (--crash-every 0)"
	if crashEvery > 0 {
		crash = fmt.Sprintf("reconciliation-worker crashes every %s: its heartbeat stops and it reads missing (CRITICAL) until it is back", crashEvery)
	}
	stall := "deal-timeout-worker does not stall (--stall-every 0)"
	if stallEvery > 0 {
		stall = fmt.Sprintf("deal-timeout-worker stalls for %s every %s: messages wait, and once heartbeat.idle_after passed it reads stuck (WARNING) with its lag",
			devstack.DefaultStallFor, stallEvery)
	}
	if outageEvery > 0 {
		stall += fmt.Sprintf(";\n     payout-executor's downstream is down for %s every %s: its kill switch trips and it reads PAUSED (kill_switch) instead of dead-lettering the outage",
			devstack.DefaultOutageFor, outageEvery)
	}
	self := selfPath()
	kept := "nothing is kept"
	if !devstack.Embedded(st.Config.Broker) {
		where += ", every name " + st.Prefix() + ".*"
		kept = "what it declared on RabbitMQ is deleted (unless --keep)"
	}
	topics := make([]string, len(st.Config.Workers))
	for i, w := range st.Config.Workers {
		topics[i] = w.Topic
	}
	traffic := "Within seconds dead letters arrive in\n     " + strings.Join(topics, ", ") + ":\n     some messages fail for good, some exhaust their retries."
	if rate == 0 {
		traffic = "No sample traffic (--rate 0). Send one that fails for good:\n     " + self + " publish --config " + cfgFile + " --topic " + topics[0] + ` --data '{"fate":"permanent"}'`
	}
	fmt.Fprintf(w, `redrive dev: everything runs in this process; Ctrl-C stops it and %s.

  broker      %s
  redis       embedded (miniredis) at %s
  dlq store   in memory

  console     http://%s/            log in with the token %s
  admin API   http://%s/internal/v1/dlq   (Authorization: Bearer %s)
  metrics     http://%s/metrics
  config      %s

A short tour:
  1. Open the console and log in. %s
  2. Open a dead letter: its payload, headers, error and retry history.
     Replay it, or discard it with a reason; the audit trail shows who did what.
  3. Watch retries: curl -s http://%s/metrics | grep -E 'worker_retry_total|worker_dlq_messages_total'
  4. Workers (console, Workers page): %s;
     %s.
  5. The CLI sees the same: %s workers --config %s   (or lag, dlq ls)
`, kept, where, st.RedisAddr(), d.AdminAddr(), token, d.AdminAddr(), token, d.MetricsAddr(), cfgFile, traffic, d.MetricsAddr(), crash, stall, self, cfgFile)
}
