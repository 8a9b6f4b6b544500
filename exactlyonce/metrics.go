package exactlyonce

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/internal/promshare"
)

// Metric names.
const (
	MetricInboxHandled    = "redrive_inbox_handled_total"
	MetricInboxDuplicates = "redrive_inbox_duplicates_total"
	MetricInboxRows       = "redrive_inbox_rows"
	MetricOutboxUnsent    = "redrive_outbox_unsent"
	MetricOutboxOldest    = "redrive_outbox_oldest_unsent_seconds"
	MetricOutboxStalled   = "redrive_outbox_stalled"
	MetricOutboxUp        = "redrive_outbox_up"
	MetricPublished       = "redrive_outbox_published_total"
	MetricPublishErrors   = "redrive_outbox_publish_errors_total"
	MetricRelayLag        = "redrive_outbox_relay_lag_seconds"
	MetricRelayShards     = "redrive_outbox_relay_shards"
	MetricParked          = "redrive_outbox_parked_total"
)

// lagBuckets bound redrive_outbox_relay_lag_seconds: from a relay woken by
// NOTIFY (milliseconds) to one that was down.
var lagBuckets = []float64{0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// metrics are a store's metrics; with no Registerer they are counted but
// not exported.
type metrics struct {
	handled, duplicates *prometheus.CounterVec
	published, errors   prometheus.Counter
	parked              prometheus.Counter
	lag                 prometheus.Histogram
	shards              prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, s *Store) (*metrics, error) {
	m := &metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricInboxHandled,
			Help: "Deliveries the inbox handled and committed, by worker (the inbox's name)."}, []string{"worker"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricInboxDuplicates,
			Help: "Deliveries the inbox acknowledged without calling the handler because their message was handled before, by worker."}, []string{"worker"}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPublished,
			Help: "Outbox messages the relays of this process published (confirmed by the broker)."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricPublishErrors,
			Help: "Broker.Publish calls of this process's relays that failed (the topic's messages wait and are published again)."}),
		parked: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricParked,
			Help: "Outbox messages this process's relays parked in redrive_outbox_parked because the broker refuses them for good (over its size limit)."}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricRelayLag,
			Help:    "Time from an outbox message's write to the broker's confirm of its publication (commit to publish, plus the transaction's time after the write).",
			Buckets: lagBuckets}),
		shards: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricRelayShards,
			Help: "Outbox shards the relays of this process own (of 64)."}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.handled, err = registerShared(reg, m.handled); err != nil {
		return nil, err
	}
	if m.duplicates, err = registerShared(reg, m.duplicates); err != nil {
		return nil, err
	}
	if m.published, err = registerShared(reg, m.published); err != nil {
		return nil, err
	}
	if m.errors, err = registerShared(reg, m.errors); err != nil {
		return nil, err
	}
	if m.parked, err = registerShared(reg, m.parked); err != nil {
		return nil, err
	}
	if m.lag, err = registerShared(reg, m.lag); err != nil {
		return nil, err
	}
	if m.shards, err = registerShared(reg, m.shards); err != nil {
		return nil, err
	}
	// One collector per registry samples every store registered with it.
	t, err := registerShared(reg, &tables{})
	if err != nil {
		return nil, err
	}
	t.add(s)
	return m, nil
}

// registerShared registers c on reg, or returns the collector of the same
// description registered before (several stores in one process).
func registerShared[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promshare.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("exactlyonce: register metrics: %w", err)
	}
	return c, nil
}

// Descriptions of the sampled metrics, by the store's schema (empty: the
// search_path's).
var (
	descUnsent = prometheus.NewDesc(MetricOutboxUnsent, "Messages in the outbox not yet confirmed by the broker (committed; sampled when scraped), by schema (empty: the search_path's).",
		[]string{"schema"}, nil)
	descOldest  = prometheus.NewDesc(MetricOutboxOldest, "Age of the oldest message in the outbox (0 when empty; sampled when scraped).", []string{"schema"}, nil)
	descStalled = prometheus.NewDesc(MetricOutboxStalled, "1 when the oldest message in the outbox is older than the configured stalled_after (alert OutboxNotDraining), else 0.",
		[]string{"schema"}, nil)
	descUp = prometheus.NewDesc(MetricOutboxUp, "1 when the outbox and inbox tables could be read at the last scrape, else 0 (the other sampled metrics are then absent).",
		[]string{"schema"}, nil)
	descRows = prometheus.NewDesc(MetricInboxRows, "Rows of the inbox, as PostgreSQL's statistics estimate them (reltuples of its partitions).", []string{"schema"}, nil)
)

// sampleTimeout bounds the tables' sample at scrape time.
const sampleTimeout = 5 * time.Second

// tables samples the outbox and the inbox of its stores when scraped.
type tables struct {
	mu     sync.Mutex
	stores []*Store
}

func (t *tables) add(s *Store) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, x := range t.stores {
		if x.cfg.Schema == s.cfg.Schema && x.pool == s.pool {
			return // the same tables
		}
	}
	t.stores = append(t.stores, s)
}

// Describe implements prometheus.Collector.
func (t *tables) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUnsent, descOldest, descStalled, descUp, descRows} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (t *tables) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	stores := slices.Clone(t.stores)
	t.mu.Unlock()
	for _, s := range stores {
		t.collect(ch, s)
	}
}

func (t *tables) collect(ch chan<- prometheus.Metric, s *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	schema := s.cfg.Schema
	smp, err := s.Sample(ctx)
	if err != nil {
		s.log.Warn("exactlyonce: cannot sample the outbox and inbox tables", "schema", schema, "error", err)
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0, schema)
		return
	}
	stalled := 0.0
	if smp.Stalled {
		stalled = 1
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1, schema)
	ch <- prometheus.MustNewConstMetric(descUnsent, prometheus.GaugeValue, float64(smp.Unsent), schema)
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, smp.OldestUnsent.Seconds(), schema)
	ch <- prometheus.MustNewConstMetric(descStalled, prometheus.GaugeValue, stalled, schema)
	ch <- prometheus.MustNewConstMetric(descRows, prometheus.GaugeValue, float64(smp.InboxRows), schema)
}

// Sample is what the tables hold now.
type Sample struct {
	// Unsent is the number of messages in the outbox.
	Unsent int64
	// OldestUnsent is the age of the oldest of them (0 when none).
	OldestUnsent time.Duration
	// Stalled is OldestUnsent > Config.StalledAfter.
	Stalled bool
	// InboxRows is PostgreSQL's estimate of the inbox's rows.
	InboxRows int64
}

// Sample reads the outbox's size and age and the inbox's estimated size
// (three cheap reads: a count of the outbox, which holds only unsent
// messages, its first row, and the statistics of the inbox's partitions).
func (s *Store) Sample(ctx context.Context) (Sample, error) {
	var smp Sample
	var oldest *float64
	var rows float64
	if err := s.pool.QueryRow(ctx, s.sql.sample, s.sql.inbox).Scan(&smp.Unsent, &oldest, &rows); err != nil {
		return Sample{}, fmt.Errorf("exactlyonce: sample: %w", err)
	}
	if oldest != nil {
		smp.OldestUnsent = time.Duration(max(*oldest, 0) * float64(time.Second))
	}
	smp.Stalled = smp.OldestUnsent > s.cfg.StalledAfter
	smp.InboxRows = int64(rows)
	return smp, nil
}
