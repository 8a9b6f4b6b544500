package dlq

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names Ops exports (see DESIGN.md, "Metrics").
const (
	MetricReplayed = "worker_dlq_replayed_total"
	MetricPending  = "redrive_dlq_pending"
)

// metrics are Ops's Prometheus metrics. A nil *metrics does nothing.
type metrics struct {
	replayedTotal *prometheus.CounterVec
	pending       *prometheus.GaugeVec

	mu    sync.Mutex
	known map[string]bool // DLQs with a pending gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		replayedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReplayed,
			Help: "Dead letters replayed to their source, by DLQ (including reconciled replays).",
		}, []string{"dlq"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricPending,
			Help: "Dead letters waiting for an operator (status pending), by DLQ, as of the last refresh.",
		}, []string{"dlq"}),
		known: map[string]bool{},
	}
	for _, c := range []prometheus.Collector{m.replayedTotal, m.pending} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) replayed(dlq string) {
	if m != nil {
		m.replayedTotal.WithLabelValues(dlq).Inc()
	}
}

// setPending sets the gauge of every DLQ in counts, and 0 for those seen
// before that are gone.
func (m *metrics) setPending(counts map[string]int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.known {
		if _, ok := counts[name]; !ok {
			m.pending.WithLabelValues(name).Set(0)
		}
	}
	for name, n := range counts {
		m.known[name] = true
		m.pending.WithLabelValues(name).Set(float64(n))
	}
}

// RefreshMetrics sets redrive_dlq_pending from the store's summaries (one
// grouped count, not a scan per scrape). Run calls it every
// MetricsInterval; it does nothing without a Registerer.
func (o *Ops) RefreshMetrics(ctx context.Context) error {
	if o.metrics == nil {
		return nil
	}
	infos, err := o.DLQs(ctx)
	if err != nil {
		return fmt.Errorf("dlq: refresh metrics: %w", err)
	}
	counts := make(map[string]int64, len(infos))
	for _, in := range infos {
		counts[in.DLQ] = in.Pending
	}
	o.metrics.setPending(counts)
	return nil
}
