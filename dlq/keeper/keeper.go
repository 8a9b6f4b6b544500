package keeper

import (
	"context"
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/promshare"
)

// Config configures a Keeper.
type Config struct {
	// Source delivers the DLQs' messages. Required.
	Source dlq.Source
	// Store keeps the entries. Required.
	Store dlq.Store
	// Broker is the name of the backend Source belongs to (a
	// driver.Descriptor's Name: "rabbitmq", "kafka"), recorded with every
	// entry. Required.
	Broker string
	// DLQs maps each DLQ name to its severity (empty =
	// broker.DefaultSeverity). Required, at least one.
	DLQs map[string]broker.Severity
	// Hook, when set, is called for every new, parseable entry.
	Hook dlq.Hook
	// Registerer receives worker_dlq_messages_total{dlq,severity}, every
	// DLQ's series created at 0 (so that Prometheus sees the first dead
	// letter as an increase), and worker_dlq_processing_seconds{dlq,severity};
	// nil = no metrics.
	Registerer prometheus.Registerer
	// Ops, when set, counts each new entry in its redrive_dlq_pending at
	// once (Ops.NoteArrival), before worker_dlq_messages_total counts it:
	// a scrape that shows an arrival shows it pending too. Default none
	// (the pending gauge follows at Ops's next refresh).
	Ops *operate.Ops
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Keeper consumes every DLQ of the configured broker and stores each dead
// letter once: decode → insert (idempotent on the message's identity) →
// count and log → hook → only then acknowledge or commit. When the store
// or the hook fails, nothing is acknowledged and the message is offered
// again with back-off: nothing is lost, and several keepers may run at once.
type Keeper struct {
	cfg     Config
	log     *slog.Logger
	total   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// Metric names the keeper exports.
const (
	MetricMessages   = "worker_dlq_messages_total"
	MetricProcessing = "worker_dlq_processing_seconds"
)

// processingBuckets bound worker_dlq_processing_seconds: from a keeper
// keeping up (well under a second) to one that was down for half an hour.
var processingBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c Config) Validate() error {
	switch {
	case c.Source == nil:
		return errors.New("dlq: keeper.Config.Source: required")
	case c.Store == nil:
		return errors.New("dlq: keeper.Config.Store: required")
	case !driver.ValidName(c.Broker):
		return fmt.Errorf("dlq: keeper.Config.Broker: must be a backend's name (1 to 32 characters of [a-z0-9_-]), got %q", c.Broker)
	case len(c.DLQs) == 0:
		return errors.New("dlq: keeper.Config.DLQs: required, at least one DLQ to keep")
	}
	return nil
}

// New validates cfg and registers the keeper's metric.
func New(cfg Config) (*Keeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	k := &Keeper{cfg: cfg, log: cfg.Logger}
	k.total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricMessages,
		Help: "Dead letters stored by the keeper, by DLQ and severity; every kept DLQ's series starts at 0.",
	}, []string{"dlq", "severity"})
	k.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricProcessing,
		Help:    "Time from a dead letter's failure (its last failure time) to its entry being stored by the keeper, by DLQ and severity.",
		Buckets: processingBuckets,
	}, []string{"dlq", "severity"})
	if cfg.Registerer != nil {
		var err error
		if k.total, err = registerShared(cfg.Registerer, k.total); err != nil {
			return nil, err
		}
		if k.latency, err = registerShared(cfg.Registerer, k.latency); err != nil {
			return nil, err
		}
	}
	// Known label values are exported from the start, at 0
	// (client_golang's advice): a series first seen at 1 is no increase.
	for name := range cfg.DLQs {
		sev := k.severity(name)
		k.total.WithLabelValues(name, sev)
		k.latency.WithLabelValues(name, sev)
	}
	return k, nil
}

// registerShared registers c on reg, or returns the collector of the
// same description registered before (several keepers in one process).
func registerShared[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promshare.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("dlq: keeper: register metrics: %w", err)
	}
	return c, nil
}

// severity is the configured severity of dlq, the default when unknown.
func (k *Keeper) severity(dlqName string) string {
	if sev := k.cfg.DLQs[dlqName]; sev != "" {
		return string(sev)
	}
	return string(broker.DefaultSeverity)
}

// Run keeps the DLQs until ctx ends, a batch at a time when the Source
// is a BatchSource.
func (k *Keeper) Run(ctx context.Context) error {
	names := make([]string, 0, len(k.cfg.DLQs))
	for n := range k.cfg.DLQs {
		names = append(names, n)
	}
	k.log.Info("dlq: keeper started", "broker", k.cfg.Broker, "dlqs", names)
	if bs, ok := k.cfg.Source.(dlq.BatchSource); ok {
		return bs.ConsumeDeadLetterBatches(ctx, names, k.HandleBatch)
	}
	return k.cfg.Source.ConsumeDeadLetters(ctx, names, k.Handle)
}

// Handle stores one dead letter and calls the hook; a nil error means the
// message may be acknowledged. Sources call it; it is exported for sources
// outside this package.
func (k *Keeper) Handle(ctx context.Context, dl dlq.DeadLetter) error {
	return k.HandleBatch(ctx, []dlq.DeadLetter{dl})[0]
}

// keeperPasses bounds the inserts of one batch: as read, then the records
// refused for an id conflict (without their id) or as invalid (raw), then
// those of the second pass refused as invalid (raw).
const keeperPasses = 3

// HandleBatch stores dead letters in one Store.InsertBatch and calls the
// hook for each new one; it returns one error per dead letter, nil when
// its message may be acknowledged. A dead letter the store refuses is
// reported (logged and its error returned: not acknowledged, offered
// again) while the others are stored. One whose id belongs to an older
// entry of another identity (a recreated Kafka DLQ topic) is stored with an
// id the store assigns; one that cannot be stored as read is stored raw
// (never dropped).
func (k *Keeper) HandleBatch(ctx context.Context, dls []dlq.DeadLetter) []error {
	errs := make([]error, len(dls))
	recs := make([]dlq.Record, len(dls))
	now := k.cfg.Now()
	for i, dl := range dls {
		recs[i] = dlq.Record{Broker: k.cfg.Broker, DLQ: dl.DLQ, ID: dl.ID, Identity: dl.Identity, Entry: dl.Entry,
			Severity: k.severity(dl.DLQ), ReceivedAt: now}
	}
	res := make([]dlq.InsertResult, len(dls))
	todo := make([]int, len(dls))
	for i := range todo {
		todo[i] = i
	}
	for pass := 0; pass < keeperPasses && len(todo) > 0; pass++ {
		batch := make([]dlq.Record, len(todo))
		for j, i := range todo {
			batch[j] = recs[i]
		}
		got, err := k.cfg.Store.InsertBatch(ctx, batch)
		if err != nil {
			for _, i := range todo {
				res[i].Err = err
			}
			break
		}
		again := todo[:0]
		for j, i := range todo {
			res[i] = got[j]
			switch {
			case errors.Is(got[j].Err, dlq.ErrIDConflict):
				// The id (Kafka partition-offset) belongs to an older
				// entry of another identity: the DLQ topic was
				// recreated. Let the store assign an id.
				recs[i].ID = ""
				again = append(again, i)
			case errors.Is(got[j].Err, dlq.ErrInvalidRecord):
				k.log.Error("dlq: dead letter cannot be stored as read; storing it raw", "dlq", dls[i].DLQ, "err", got[j].Err)
				recs[i] = k.raw(recs[i], dls[i], got[j].Err)
				again = append(again, i)
			}
		}
		todo = again
	}
	for i, r := range res {
		if r.Err != nil {
			k.log.Error("dlq: dead letter not stored; it stays unacknowledged and is offered again", "dlq", dls[i].DLQ, "id", dls[i].ID, "err", r.Err)
			errs[i] = fmt.Errorf("dlq: keeper: store dead letter of %s: %w", dls[i].DLQ, r.Err)
			continue
		}
		errs[i] = k.stored(ctx, recs[i], r)
	}
	return errs
}

// raw is r kept raw: what can be kept of a dead letter that cannot be
// stored as read.
func (k *Keeper) raw(r dlq.Record, dl dlq.DeadLetter, err error) dlq.Record {
	r.Entry = dlq.Entry{OriginalValue: dl.Entry.OriginalValue, Reason: string(dlq.ReasonUnparseable), ErrorMessage: dlq.CleanText(err.Error()),
		OriginalPartition: -1, OriginalOffset: -1}
	r.ID = ""
	if r.Identity == "" {
		r.Identity = dl.ID
	}
	return r
}

// stored counts and logs a new entry and calls the hook for a pending one.
func (k *Keeper) stored(ctx context.Context, r dlq.Record, res dlq.InsertResult) error {
	stored, sev := res.Stored, r.Severity
	if res.Inserted {
		if stored.Status == dlq.StatusPending && k.cfg.Ops != nil {
			k.cfg.Ops.NoteArrival(r.DLQ)
		}
		k.total.WithLabelValues(r.DLQ, sev).Inc()
		if failed := stored.Entry.LastFailureAt; !failed.IsZero() {
			k.latency.WithLabelValues(r.DLQ, sev).Observe(max(r.ReceivedAt.Sub(failed).Seconds(), 0))
		}
		level := slog.LevelWarn
		if sev == string(broker.SeverityCritical) {
			level = slog.LevelError
		}
		e := stored.Entry
		k.log.Log(ctx, level, "dlq: dead letter stored", "dlq", r.DLQ, "id", stored.ID, "severity", sev,
			"reason", e.Reason, "worker", e.Worker, "error_class", e.ErrorClass, "error", e.ErrorMessage, "message_id", e.MessageID)
	}
	if k.cfg.Hook != nil && stored.Entry.Reason != string(dlq.ReasonUnparseable) && stored.Status == dlq.StatusPending {
		if err := k.cfg.Hook.DeadLettered(ctx, stored); err != nil {
			return fmt.Errorf("dlq: keeper: dead-letter hook for %s: %w", stored.Key(), err)
		}
	}
	return nil
}
