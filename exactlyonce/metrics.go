package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
)

// lagBuckets bound redrive_outbox_relay_lag_seconds: from a relay woken by
// NOTIFY (milliseconds) to one that was down.
var lagBuckets = []float64{0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// metrics are a store's metrics; with no Registerer they are counted but
// not exported.
type metrics struct {
	handled, duplicates *prometheus.CounterVec
	published, errors   prometheus.Counter
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
	if m.lag, err = registerShared(reg, m.lag); err != nil {
		return nil, err
	}
	if m.shards, err = registerShared(reg, m.shards); err != nil {
		return nil, err
	}
	// A second store of the same schema in the registry: the first one's
	// collector samples the same tables.
	if err := reg.Register(&tables{s: s, d: newDescs(s.cfg.Schema)}); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		return nil, fmt.Errorf("exactlyonce: register metrics: %w", err)
	}
	return m, nil
}

// registerShared registers c on reg, or returns the collector of the same
// description registered before (several stores in one process).
func registerShared[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &are):
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("exactlyonce: register metrics: %w", err)
}

// descs are the descriptions of a store's sampled metrics, labelled with
// its schema (several stores may share a registry).
type descs struct{ unsent, oldest, stalled, up, rows *prometheus.Desc }

func newDescs(schema string) descs {
	l := prometheus.Labels{"schema": schema}
	return descs{
		unsent:  prometheus.NewDesc(MetricOutboxUnsent, "Messages in the outbox not yet confirmed by the broker (committed; sampled when scraped), by schema (empty: the search_path's).", nil, l),
		oldest:  prometheus.NewDesc(MetricOutboxOldest, "Age of the oldest message in the outbox (0 when empty; sampled when scraped).", nil, l),
		stalled: prometheus.NewDesc(MetricOutboxStalled, "1 when the oldest message in the outbox is older than the configured stalled_after (alert OutboxNotDraining), else 0.", nil, l),
		up:      prometheus.NewDesc(MetricOutboxUp, "1 when the outbox and inbox tables could be read at the last scrape, else 0 (the other sampled metrics are then absent).", nil, l),
		rows:    prometheus.NewDesc(MetricInboxRows, "Rows of the inbox, as PostgreSQL's statistics estimate them (reltuples of its partitions).", nil, l),
	}
}

// sampleTimeout bounds the tables' sample at scrape time.
const sampleTimeout = 5 * time.Second

// tables samples the outbox and the inbox when scraped.
type tables struct {
	s *Store
	d descs
}

// Describe implements prometheus.Collector.
func (t *tables) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{t.d.unsent, t.d.oldest, t.d.stalled, t.d.up, t.d.rows} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (t *tables) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	smp, err := t.s.Sample(ctx)
	if err != nil {
		t.s.log.Warn("exactlyonce: cannot sample the outbox and inbox tables", "schema", t.s.cfg.Schema, "error", err)
		ch <- prometheus.MustNewConstMetric(t.d.up, prometheus.GaugeValue, 0)
		return
	}
	stalled := 0.0
	if smp.Stalled {
		stalled = 1
	}
	ch <- prometheus.MustNewConstMetric(t.d.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(t.d.unsent, prometheus.GaugeValue, float64(smp.Unsent))
	ch <- prometheus.MustNewConstMetric(t.d.oldest, prometheus.GaugeValue, smp.OldestUnsent.Seconds())
	ch <- prometheus.MustNewConstMetric(t.d.stalled, prometheus.GaugeValue, stalled)
	ch <- prometheus.MustNewConstMetric(t.d.rows, prometheus.GaugeValue, float64(smp.InboxRows))
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
