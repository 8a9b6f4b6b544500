// Package bench measures redrive against the raw broker clients doing the
// same work, in one process and one run: publishing with confirms,
// draining a queue or topic with a no-op handler, the retry and dead-letter
// paths, and RabbitMQ delayed delivery. With Config.Peers it also measures
// the libraries a user might pick instead (watermill-amqp, watermill-kafka,
// kafka-go), each in a child process built from the peers module
// (PeersModuleDir), a Go module of its own so that redrive's never
// requires them. Run returns one Row per scenario, broker and client, each
// with its CPU time and allocations per message; Report.Markdown renders
// them as the table `redrive bench` prints and BENCHMARKS.md records.
//
// Figures are measurements of one machine at one moment; nothing here
// asserts a target. Targets are reported as met or missed per row.
package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redrive/redrive/broker"
)

// Scenario names accepted by Config.Scenarios.
const (
	ScenarioPublish = "publish" // publish with confirms / acks=all
	ScenarioConsume = "consume" // drain a pre-filled queue/topic, no-op handler
	ScenarioRetry   = "retry"   // as consume, 10 % of messages fail once
	ScenarioDLQ     = "dlq"     // as consume, 1 % of messages go to the DLQ
	ScenarioDelay   = "delay"   // RabbitMQ delayed delivery: lateness, early count, tier passes
	ScenarioReplay  = "replay"  // RabbitMQ DLQ replay-all from an in-memory store vs raw publish
	ScenarioScrape  = "scrape"  // Kafka: a full /metrics scrape of the exporter over many groups × partitions
	ScenarioMonitor = "monitor" // Redis: heartbeat.Monitor.Check over many workers
	ScenarioKeeper  = "keeper"  // the DLQ keeper into PostgreSQL vs the raw client draining the same DLQ
	ScenarioRelay   = "relay"   // redrive relay POSTing a drained queue/topic vs a plain net/http client
	ScenarioEffects = "effects" // exactly-once: inbox vs a plain transaction, relay vs raw confirmed publish, commit-to-publish latency
)

// Broker names accepted by Config.Brokers: the backends' names.
const (
	RabbitMQ = "rabbitmq"
	Kafka    = "kafka"
)

// Redis is the Broker of the monitor scenario's row: it runs against Redis
// whichever brokers are measured.
const Redis = "redis"

// Client names of a Row.
const (
	ClientRedrive = "redrive"
	ClientRaw     = "raw"
	// ClientRawID is the raw Kafka producer writing the message id header
	// redrive writes (x-redrive-message-id, 32 hex characters) besides
	// the message's own: the same bytes on the wire.
	ClientRawID = "raw, id header"
	// ClientRawHeaders is the raw Kafka consumer building, for each
	// record, the map of its headers that redrive's Delivery.Headers is
	// (the Kafka consume row): the work redrive's default promises a
	// handler, done by hand.
	ClientRawHeaders = "raw, headers map"
	// ClientOnDemand is redrive with Subscription.HeadersOnDemand (the
	// Kafka consume row).
	ClientOnDemand = "redrive, headers on demand"
	// ClientReuse is redrive with Subscription.ReuseDeliveries (the Kafka
	// consume row): a handler that keeps nothing, the Headers map reused.
	ClientReuse = "redrive, reused deliveries"
	// ClientLean is redrive with HeadersOnDemand and ReuseDeliveries (the
	// Kafka consume row): nothing allocated per record.
	ClientLean = "redrive, on demand, reused"
)

// AllScenarios lists every scenario in the order Run runs them.
var AllScenarios = []string{ScenarioPublish, ScenarioConsume, ScenarioRetry, ScenarioDLQ, ScenarioShare, ScenarioDelay, ScenarioReplay, ScenarioKeeper, ScenarioRelay, ScenarioEffects, ScenarioScrape, ScenarioMonitor}

// AllBrokers lists every broker in the order Run runs them.
var AllBrokers = []string{RabbitMQ, Kafka}

// Row is one measurement: a scenario on one broker through one client.
type Row struct {
	Scenario string
	Broker   string
	Client   string // ClientRedrive, ClientRaw or a peer (ClientWatermillAMQP, ...)
	// Messages is how many messages the measurement covered.
	Messages int
	// Elapsed is the measured time (see Rate).
	Elapsed time.Duration
	// Rate is messages per second over Elapsed.
	Rate float64
	// P50, P99 and Max are latencies: per Publish call / raw batch for
	// publish, lateness past the due time for delay; zero when the
	// scenario has none (draining a pre-filled queue).
	P50, P99, Max time.Duration
	// AllocsPerMsg is runtime.MemStats.Mallocs over the measurement
	// divided by Messages: every allocation of the process, including the
	// client library's (and kfake's, when it runs in-process); a peer's
	// row adds its child process's.
	AllocsPerMsg float64
	// CPUPerMsg is the process's user+system CPU time (getrusage) over
	// the measurement divided by Messages, kfake's included when it runs
	// in-process; a peer's row adds its child process's. Zero where
	// getrusage is not available.
	CPUPerMsg time.Duration
	// VsPeer is this redrive row's Rate over the fastest peer row's of the
	// same scenario and broker (BestPeer); 0 when there is none.
	VsPeer   float64
	BestPeer string
	// Ratio is this row's Rate over its baseline's (the raw client, or the
	// no-failure redrive figure for retry and dlq); 0 when it has none.
	Ratio float64
	// Baseline names what Ratio compares with.
	Baseline string
	// Target is the target for this row ("" when none) and Met
	// whether it was reached.
	Target string
	Met    bool
	// Note carries scenario-specific figures (early deliveries, tier
	// passes).
	Note string
	// Early counts deliveries before their due time (delay scenario).
	Early int
}

// Report is the result of Run.
type Report struct {
	// Config is the configuration Run used, defaults filled in.
	Config Config
	// Rows in the order measured.
	Rows []Row
	// Started and Took time the whole run.
	Started time.Time
	Took    time.Duration
}

// Run runs the configured scenarios on the configured brokers, redrive
// and raw client side by side, and returns the rows. A broker that cannot
// be reached fails the run.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var peers *peerRunner
	if cfg.Peers {
		dir := cfg.PeersDir
		if dir == "" {
			if dir, err = FindPeersDir(); err != nil {
				return nil, err
			}
		}
		if peers, err = buildPeers(ctx, dir, cfg.Logger); err != nil {
			return nil, err
		}
		defer peers.close()
	}
	rep = &Report{Config: cfg, Started: time.Now()}
	defer func() {
		comparePeers(rep.Rows)
		rep.Took = time.Since(rep.Started)
	}()
	runID := broker.NewMessageID()[:8]
	for _, b := range cfg.Brokers {
		var rows []Row
		var err error
		switch b {
		case RabbitMQ:
			rows, err = runRabbit(ctx, cfg, "bench-"+runID, peers)
		case Kafka:
			rows, err = runKafka(ctx, cfg, "bench-"+runID, peers)
		}
		rep.Rows = append(rep.Rows, rows...)
		if err != nil {
			return rep, fmt.Errorf("bench %s: %w", b, err)
		}
	}
	if cfg.runs(ScenarioMonitor) {
		mctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		rows, err := runMonitor(mctx, cfg, "redrive-bench-"+runID)
		cancel()
		rep.Rows = append(rep.Rows, rows...)
		if err != nil {
			return rep, fmt.Errorf("bench %s: %s: %w", Redis, ScenarioMonitor, err)
		}
	}
	return rep, nil
}

// withLatencies sets P50, P99 and Max from ds (sorted in place).
func (r Row) withLatencies(ds []time.Duration) Row {
	if len(ds) == 0 {
		return r
	}
	slices.Sort(ds)
	r.P50 = percentile(ds, 0.50)
	r.P99 = percentile(ds, 0.99)
	r.Max = ds[len(ds)-1]
	return r
}

// percentile returns the p-quantile of sorted ds (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// compare sets r's ratio against base and grades it against min.
func compare(r *Row, base Row, baseline string, target float64) {
	if base.Rate <= 0 {
		return
	}
	grade(r, r.Rate/base.Rate, baseline, target)
}

// grade sets r's ratio to baseline and whether it meets target.
func grade(r *Row, ratio float64, baseline string, target float64) {
	r.Ratio, r.Baseline = ratio, baseline
	r.Target = fmt.Sprintf("≥ %.2f × %s", target, baseline)
	r.Met = ratio >= target
}

// body returns a message body of size bytes.
func body(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}
