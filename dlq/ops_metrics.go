package dlq

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names Ops exports (listed in docs/monitoring.md, "Metrics";
// where Ops sits in docs/architecture.md).
const (
	MetricReplayed = "worker_dlq_replayed_total"
	MetricPending  = "redrive_dlq_pending"
)

// metrics are Ops's Prometheus metrics. A nil *metrics does nothing.
type metrics struct {
	replayedTotal *prometheus.CounterVec
	pending       *prometheus.GaugeVec

	mu    sync.Mutex
	known map[string]bool // "dlq\x00severity" of the pending series exported
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		replayedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReplayed,
			Help: "Dead letters replayed to their source, by DLQ (including reconciled replays).",
		}, []string{"dlq"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricPending,
			Help: PendingHelp,
		}, []string{"dlq", "severity"}),
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

// PendingHelp is the help of redrive_dlq_pending.
const PendingHelp = "Dead letters waiting for an operator (status pending), by DLQ and its severity, as of the last refresh; every configured DLQ is exported, at 0 when empty."

// setPending sets the gauge of every DLQ in infos and removes the series
// of those no longer listed (or whose severity changed).
func (m *metrics) setPending(infos []DLQInfo) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := make(map[string]string, len(infos))
	for _, in := range infos {
		now[in.DLQ+"\x00"+in.Severity] = ""
	}
	for key := range m.known {
		if _, ok := now[key]; !ok {
			dlq, sev, _ := strings.Cut(key, "\x00")
			m.pending.DeleteLabelValues(dlq, sev)
			delete(m.known, key)
		}
	}
	for _, in := range infos {
		m.known[in.DLQ+"\x00"+in.Severity] = true
		m.pending.WithLabelValues(in.DLQ, in.Severity).Set(float64(in.Pending))
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
	o.metrics.setPending(infos)
	return nil
}
