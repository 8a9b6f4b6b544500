package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/redrive/redrive/internal/tools/bench"
)

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure redrive against the raw RabbitMQ and Kafka clients and print a markdown table",
		Long: `Runs each scenario through redrive and through the raw client doing the same
work, in one process and one run, and prints a markdown table: messages/s,
p50/p99 latency, CPU time (user+system, getrusage) per message and what
one core handles at that cost (msg/s per core = 1 s / CPU per message),
allocations per message, and the ratio redrive/raw, with the issue's
target met or missed per row. Targets are reported, never enforced: the exit status is 0
whenever the run completes.

--peers also measures, in the same run on the same broker, the libraries
a user might pick instead: watermill-amqp v3 (with watermill's Retry and
PoisonQueue middleware for retry and dlq) on RabbitMQ, watermill-kafka v3
(Sarama) and segmentio/kafka-go (publish and consume) on Kafka, on the
publish, consume, retry and dlq scenarios; the "vs best peer" column is
redrive's rate over the fastest peer's. The peers live in a Go module of
their own (internal/tools/bench/peers of redrive's source, found above the
working directory or named by --peers-dir) that the go command builds
first; each measurement runs in a child process, whose own CPU and
allocations are added to the row's. A peer's notes say where its
guarantees are weaker than redrive's.

Scenarios:
  publish  Publish in batches with confirms (RabbitMQ) / acks=all,
           idempotent (Kafka) vs raw amqp091-go deferred confirms /
           franz-go ProduceSync with the same batches. Kafka: 15 rounds,
           the clients in turn, ratio the median of the rounds'; a
           "raw, id header" row writes the message id header redrive
           writes, the same bytes, for the note's second ratio
  consume  drain a pre-filled queue/topic, no-op handler, ack/commit; same
           prefetch and concurrency on both sides. Kafka: an untimed
           drain, then 7 rounds of --kafka-messages, the clients in
           turn; RabbitMQ: 3 rounds of a third of --messages, each
           client filling and draining its queue in turn; rows are
           median rounds, ratios the median of the rounds' ratios.
           Kafka rows: redrive by default (a Headers map), with
           HeadersOnDemand, with ReuseDeliveries, and with both; a
           "raw, headers map" row builds the map a Delivery's Headers
           is for each record, for the default row's second ratio
  retry    as consume, 10 % of messages fail once (vs redrive consume);
           RabbitMQ: graded against the ideal 1 / (1 + f + f x consume /
           publish rate) of the same run (f = 0.1), target 0.9 x ideal,
           and beside a raw row doing the same work (the copy published
           back and confirmed before the ack): the broker's limit
           Kafka: each round after a drain of the same topic by the same
           handler without failures, the ratio the median of the pairs'
  dlq      as consume, 1 % of messages go to the DLQ (vs redrive consume;
           Kafka: paired rounds as retry)
  share    Kafka only: retry mode share (share groups), 7 rounds of
           --kafka-messages: redrive (7 members x 500 records a poll, 7
           handlers; by default and fetching ahead) vs 7 raw franz-go
           share clients (by default, and with strict polls as redrive's
           default, for its note's second ratio), then 10 % failing once
           (a 10 ms back-off held under the lock) and 1 % dead-lettered,
           each round paired with a drain without failures
  delay    RabbitMQ only: PublishDelayed with random delays in
           [0, --delay-span] (default 30 x resolution) through delay
           queues of --resolution x --delay-factor^k, --delay-levels
           levels: lateness, early deliveries, queues stored in per
           message, delay queues declared, and where lateness comes
           from: its p99 from the publish's return, by queues stored
           in, a 10 ms timer's lateness in this process and one raw
           TTL-queue hop measured beside it
  replay   RabbitMQ only: DLQ replay-all of an in-memory store (status
           change and audit row per entry) vs a raw publish of the same
           messages, one confirm at a time
  keeper   the DLQ keeper (keeper.Keeper into a fresh PostgreSQL schema,
           a batch per transaction, acked/committed after its commit) vs
           the raw client draining the same DLQ (ack / commit only): each
           DLQ holds --keeper-messages real dead letters (a handler
           failing permanently); target 0.9 x raw; checks the store holds
           each once and the DLQ nothing
  relay    redrive relay (package relay's Endpoint on Consume, as
           'redrive relay' runs it) draining --relay-messages pre-filled
           messages into an HTTP endpoint in this process vs a relay by
           hand: the raw client's drain with each message POSTed by a
           plain net/http client with the same CloudEvents and redrive
           headers (the same message on the wire) before its ack/commit,
           as many in flight
           (RabbitMQ --concurrency, Kafka a partition each), connections
           kept open; target 0.8 x it. A row of the plain client POSTing
           the bodies with no broker is the endpoint's ceiling. CPU/msg
           includes the endpoint's
  effects  exactly-once effects (a fresh PostgreSQL schema): redrive
           Consume with a handler inserting one row in its own
           transaction vs the same insert through the exactlyonce inbox
           (target 0.8 x); the outbox relay publishing committed
           messages vs the raw client publishing as many with confirms
           in the relay's batches (target 0.8 x raw), and beside the raw
           client relaying a plain outbox table by hand (read a batch,
           publish, delete, in turn; no target); --concurrency
           writers committing one message per transaction while a relay
           runs: commit-to-confirm p50/p99 (target p99 50 ms);
           --effects-messages each
  scrape   Kafka only: a full GET /metrics of the exporter (lag sampler as
           'redrive exporter' builds it, gzip) in the steady state (a
           sample after the format's first scrape), over
           --scrape-groups groups x --scrape-partitions partitions;
           p50/p99 per scrape (target 100 ms)
  monitor  Redis: heartbeat monitor check over --monitor-workers workers;
           p50/p99 per check (target 100 ms); runs whatever --broker says

RabbitMQ is $RABBITMQ_URL (default amqp://guest:guest@127.0.0.1:5672/);
Redis is $REDIS_ADDR (default 127.0.0.1:6379); PostgreSQL (keeper, effects) is
$DATABASE_URL (default ` + bench.DefaultDatabaseURL + `).
Every run uses its own prefix and deletes its queues, exchanges, topics,
groups, keys and schemas. Kafka
is an in-process three-broker kfake cluster unless --kafka-brokers names
one. --config is not read.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.Context(), newInvocation(cmd, args), &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.broker, "broker", "all", "`BROKER` to measure: rabbitmq, kafka or all")
	fs.StringVar(&o.scenarios, "scenarios", strings.Join(bench.AllScenarios, ","), "comma-separated `LIST` of scenarios")
	fs.IntVar(&o.cfg.Messages, "messages", bench.DefaultMessages, "`N` messages per publish, consume, retry and dlq measurement")
	fs.IntVar(&o.cfg.KafkaMessages, "kafka-messages", 0, "`N` messages per round of the Kafka consume, retry and dlq scenarios (default 5 × --messages)")
	fs.IntVar(&o.cfg.DelayMessages, "delay-messages", bench.DefaultDelayMessages, "`N` messages of the delay scenario")
	fs.IntVar(&o.cfg.ReplayMessages, "replay-messages", bench.DefaultReplayMessages, "`N` dead letters of the replay scenario")
	fs.IntVar(&o.cfg.KeeperMessages, "keeper-messages", bench.DefaultKeeperMessages, "`N` dead letters of the keeper scenario")
	fs.IntVar(&o.cfg.RelayMessages, "relay-messages", bench.DefaultRelayMessages, "`N` messages of the relay scenario")
	fs.IntVar(&o.cfg.EffectsMessages, "effects-messages", bench.DefaultEffectsMessages, "`N` messages of each effects measurement")
	fs.IntVar(&o.cfg.KeeperBatch, "keeper-batch", 0, "RabbitMQ keeper batch `N` of the keeper scenario (default rabbitmq.keeper_batch's, 256)")
	fs.IntVar(&o.cfg.Size, "size", bench.DefaultSize, "message body `BYTES`")
	fs.IntVar(&o.cfg.Batch, "batch", bench.DefaultBatch, "messages per Publish call and raw batch (`N`)")
	fs.IntVar(&o.cfg.Concurrency, "concurrency", bench.DefaultConcurrency, "RabbitMQ handler goroutines on both sides (`N`; prefetch 8×N)")
	fs.DurationVar(&o.cfg.Resolution, "resolution", bench.DefaultResolution, "RabbitMQ delay tier `RESOLUTION`")
	fs.IntVar(&o.cfg.DelayFactor, "delay-factor", bench.DefaultDelayFactor, "RabbitMQ delay `FACTOR` between levels")
	fs.IntVar(&o.cfg.DelayLevels, "delay-levels", bench.DefaultDelayLevels, "`N` RabbitMQ delay levels")
	fs.DurationVar(&o.cfg.DelaySpan, "delay-span", 0, "longest `DELAY` the delay scenario draws (default 30 × --resolution)")
	fs.StringVar(&o.cfg.DelayMode, "delay-mode", "route", "RabbitMQ delay `MODE` of the delay scenario: route or hops")
	fs.StringVar(&o.cfg.QueueType, "queue-type", "classic", "RabbitMQ queue `TYPE` of redrive's and the raw client's queues: classic or quorum")
	fs.StringVar(&o.cfg.DelayQueueType, "delay-queue-type", "", "RabbitMQ `TYPE` of redrive's delay queues: classic or quorum (default --queue-type)")
	fs.IntVar(&o.cfg.ScrapeGroups, "scrape-groups", bench.DefaultScrapeGroups, "`N` consumer groups of the scrape scenario")
	fs.IntVar(&o.cfg.ScrapePartitions, "scrape-partitions", bench.DefaultScrapePartitions, "`N` partitions each scrape group committed on")
	fs.IntVar(&o.cfg.MonitorWorkers, "monitor-workers", bench.DefaultMonitorWorkers, "`N` worker heartbeats of the monitor scenario")
	fs.IntVar(&o.cfg.Scrapes, "scrapes", bench.DefaultScrapes, "`N` timed scrapes (scrape) and checks (monitor)")
	fs.DurationVar(&o.cfg.Timeout, "timeout", 10*time.Minute, "give up on a scenario after `DURATION`")
	fs.StringVar(&o.kafkaBrokers, "kafka-brokers", "", "comma-separated `HOST:PORT` list of a Kafka cluster (default: in-process kfake)")
	fs.BoolVar(&o.cfg.Peers, "peers", false, "also measure watermill-amqp, watermill-kafka and kafka-go (builds internal/tools/bench/peers with the go command)")
	fs.StringVar(&o.cfg.PeersDir, "peers-dir", "", "`DIR` of the peers module (default: internal/tools/bench/peers above the working directory)")
	fs.StringVar(&o.out, "out", "", "also write the table to `FILE`")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
	fs.BoolVar(&o.verbose, "verbose", false, "log progress and the brokers' warnings to stderr")
	_ = cmd.RegisterFlagCompletionFunc("broker", cobra.FixedCompletions([]string{"all", bench.RabbitMQ, bench.Kafka}, cobra.ShellCompDirectiveNoFileComp))
	cmd.AddCommand(newBenchStoreCmd())
	return cmd
}

// benchOptions are the flags of redrive bench.
type benchOptions struct {
	cfg          bench.Config
	broker       string
	scenarios    string
	kafkaBrokers string
	out          string
	cpuProfile   string
	verbose      bool
}

// config turns the flags into a bench.Config.
func (o *benchOptions) config(inv *invocation) (bench.Config, error) {
	cfg := o.cfg
	switch o.broker {
	case "all":
		cfg.Brokers = bench.AllBrokers
	case bench.RabbitMQ, bench.Kafka:
		cfg.Brokers = []string{o.broker}
	default:
		return cfg, usageErrorf("--broker %q is not rabbitmq, kafka or all", o.broker)
	}
	for s := range strings.SplitSeq(o.scenarios, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Scenarios = append(cfg.Scenarios, s)
		}
	}
	for b := range strings.SplitSeq(o.kafkaBrokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.KafkaBrokers = append(cfg.KafkaBrokers, b)
		}
	}
	if cfg.KafkaMessages < 0 {
		return cfg, usageErrorf("--kafka-messages %d is negative (0: 5 × --messages)", cfg.KafkaMessages)
	}
	if cfg.Messages <= 0 || cfg.DelayMessages <= 0 || cfg.ReplayMessages <= 0 || cfg.KeeperMessages <= 0 || cfg.RelayMessages <= 0 ||
		cfg.EffectsMessages <= 0 || cfg.Size < 0 || cfg.Batch <= 0 || cfg.Concurrency <= 0 {
		return cfg, usageErrorf("--messages, --delay-messages, --replay-messages, --keeper-messages, --relay-messages, --effects-messages, --batch and --concurrency must be positive, --size not negative")
	}
	if cfg.ScrapeGroups <= 0 || cfg.ScrapePartitions <= 0 || cfg.MonitorWorkers <= 0 || cfg.Scrapes <= 0 {
		return cfg, usageErrorf("--scrape-groups, --scrape-partitions, --monitor-workers and --scrapes must be positive")
	}
	if cfg.Resolution <= 0 || cfg.DelaySpan < 0 || cfg.DelayFactor < 2 || cfg.DelayLevels <= 0 {
		return cfg, usageErrorf("--resolution and --delay-levels must be positive, --delay-span not negative, --delay-factor at least 2")
	}
	if cfg.Peers {
		if cfg.PeersDir == "" {
			dir, err := bench.FindPeersDir()
			if err != nil {
				return cfg, badInput(fmt.Errorf("--peers: %w", err))
			}
			cfg.PeersDir = dir
		}
		if _, err := os.Stat(filepath.Join(cfg.PeersDir, "go.mod")); err != nil {
			return cfg, usageErrorf("--peers-dir %q is not the peers module (%s of redrive's source): %v", cfg.PeersDir, bench.PeersModuleDir, err)
		}
	}
	cfg.RabbitURL = os.Getenv("RABBITMQ_URL")
	cfg.RedisAddr = os.Getenv("REDIS_ADDR")
	cfg.DatabaseURL = os.Getenv("DATABASE_URL")
	level := slog.LevelError
	if o.verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(inv.stderr, &slog.HandlerOptions{Level: level}))
	if err := cfg.WithDefaults().Validate(); err != nil {
		return cfg, badInput(err)
	}
	return cfg, nil
}

func runBench(ctx context.Context, inv *invocation, o *benchOptions) error {
	cfg, err := o.config(inv)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return badInput(fmt.Errorf("--cpuprofile: %w", err))
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, cfg)
	if rep == nil {
		return err
	}
	var buf bytes.Buffer
	if merr := rep.Markdown(&buf); merr != nil {
		return merr
	}
	if _, werr := inv.stdout.Write(buf.Bytes()); werr != nil {
		return werr
	}
	if o.out != "" {
		if werr := os.WriteFile(o.out, buf.Bytes(), 0o644); werr != nil {
			return fmt.Errorf("--out: %w", werr)
		}
	}
	return err
}
