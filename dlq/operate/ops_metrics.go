package operate

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
	// arrived holds, for each refresh in progress, the arrivals counted
	// (noteArrival) since it began: its snapshot may predate them, so they
	// are added to it (an arrival it already counts is counted twice
	// until the next refresh: the gauge may run ahead, never behind).
	arrived map[*map[string]float64]bool
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
		known:   map[string]bool{},
		arrived: map[*map[string]float64]bool{},
	}
	for _, c := range []prometheus.Collector{m.replayedTotal, m.pending} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) replayed(dlqName string) {
	if m != nil {
		m.replayedTotal.WithLabelValues(dlqName).Inc()
	}
}

// PendingHelp is the help of redrive_dlq_pending.
const PendingHelp = "Dead letters waiting for an operator (status pending), by DLQ and its severity, as of the last refresh; every configured DLQ is exported, at 0 when empty."

// setPending sets the gauge of every DLQ in infos, plus the arrivals
// noted since the refresh that read infos began (since), and removes the
// series of those no longer listed (or whose severity changed).
func (m *metrics) setPending(infos []DLQInfo, since *map[string]float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.arrived, since)
	now := make(map[string]string, len(infos))
	for _, in := range infos {
		now[in.DLQ+"\x00"+in.Severity] = ""
	}
	for key := range m.known {
		if _, ok := now[key]; !ok {
			dlqName, sev, _ := strings.Cut(key, "\x00")
			m.pending.DeleteLabelValues(dlqName, sev)
			delete(m.known, key)
		}
	}
	for _, in := range infos {
		m.known[in.DLQ+"\x00"+in.Severity] = true
		m.pending.WithLabelValues(in.DLQ, in.Severity).Set(float64(in.Pending) + (*since)[in.DLQ])
	}
}

// beginRefresh starts collecting the arrivals a refresh's snapshot may
// miss; setPending ends it.
func (m *metrics) beginRefresh() *map[string]float64 {
	since := &map[string]float64{}
	if m != nil {
		m.mu.Lock()
		m.arrived[since] = true
		m.mu.Unlock()
	}
	return since
}

// endRefresh drops since, of a refresh that failed.
func (m *metrics) endRefresh(since *map[string]float64) {
	if m != nil {
		m.mu.Lock()
		delete(m.arrived, since)
		m.mu.Unlock()
	}
}

// noteArrival adds a new pending entry of dlq to its pending series (the
// one exported for it, else one of severity sev) at once, and to the
// refreshes in progress.
func (m *metrics) noteArrival(dlqName, sev string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for since := range m.arrived {
		(*since)[dlqName]++
	}
	for key := range m.known {
		if name, s, _ := strings.Cut(key, "\x00"); name == dlqName {
			m.pending.WithLabelValues(dlqName, s).Inc()
			return
		}
	}
	m.known[dlqName+"\x00"+sev] = true
	m.pending.WithLabelValues(dlqName, sev).Inc()
}

// RefreshMetrics sets redrive_dlq_pending from the store's summaries (one
// grouped count, not a scan per scrape). Run calls it every
// MetricsInterval, and soon after a replay or discard (so that the gauge
// follows an operator's decision within a refresh, not an interval); it
// does nothing without a Registerer.
func (o *Ops) RefreshMetrics(ctx context.Context) error {
	if o.metrics == nil {
		return nil
	}
	since := o.metrics.beginRefresh()
	infos, err := o.DLQs(ctx)
	if err != nil {
		o.metrics.endRefresh(since)
		return fmt.Errorf("dlq: refresh metrics: %w", err)
	}
	o.metrics.setPending(infos, since)
	return nil
}

// NoteArrival counts a new pending entry of dlq in redrive_dlq_pending at
// once, ahead of the next refresh. The keeper calls it (keeper.Config.Ops)
// for every entry it stores, before it counts the entry in
// worker_dlq_messages_total, so that a scrape that shows the arrival also
// shows it pending: an alert on arrivals that resolves once none is
// pending (DLQFinancial) does not resolve between the arrival and the
// next refresh. Without a Registerer it does nothing.
func (o *Ops) NoteArrival(dlqName string) {
	if o.metrics == nil {
		return
	}
	p, _ := o.Policy(dlqName)
	o.metrics.noteArrival(dlqName, string(p.Severity))
}

// refreshSoon asks Run for a refresh of the pending gauge now (a replay
// or discard changed it); requests made while one waits are one.
func (o *Ops) refreshSoon() {
	if o.metrics == nil {
		return
	}
	select {
	case o.kick <- struct{}{}:
	default:
	}
}
