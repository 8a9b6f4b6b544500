package exporter

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/sampling"
)

// DefaultDLQInterval is the DLQSamplerConfig.Interval default, the
// refresh period of operate.Ops's own pending gauge.
const DefaultDLQInterval = 15 * time.Second

// ErrNotReady is returned by a DLQLister whose store is not open yet (the
// daemon is still connecting): the sample is not taken, so the counts read
// "not sampled yet" rather than unreadable, and nothing is logged.
var ErrNotReady = errors.New("exporter: the DLQ store is not open yet")

// DLQLister lists the DLQs with their counts by status; (*operate.Ops).DLQs
// is one (a single grouped count in the store, whatever the number of
// entries).
type DLQLister func(ctx context.Context) ([]operate.DLQInfo, error)

// DLQSamplerConfig configures a DLQSampler.
type DLQSamplerConfig struct {
	// Interval between samples; default 15 s.
	Interval time.Duration
	// Logger receives failed samples, once per outage; default
	// slog.Default().
	Logger *slog.Logger
}

// DLQSampler keeps the number of pending dead letters of every DLQ,
// refreshed on an interval, so that health requests and scrapes never
// query the store. It is a prometheus.Collector of
// redrive_dlq_pending{dlq,severity}
// for processes that do not run operate.Ops with a Registerer (which exports
// the same gauge): register it only there, or the registry refuses the
// duplicate.
type DLQSampler struct {
	list DLQLister
	cfg  DLQSamplerConfig
	desc *prometheus.Desc

	mu       sync.RWMutex
	pending  map[string]int64
	severity map[string]string
	at       time.Time
	err      error
}

// NewDLQSampler returns a sampler of list; it samples nothing until Sample
// or Run is called.
func NewDLQSampler(list DLQLister, cfg DLQSamplerConfig) *DLQSampler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultDLQInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &DLQSampler{
		list: list,
		cfg:  cfg,
		desc: prometheus.NewDesc(operate.MetricPending, operate.PendingHelp, []string{"dlq", "severity"}, nil),
	}
}

// Sample reads the counts now and caches them. When the store cannot be
// read the counts are dropped (not left stale) and the error kept; when
// the lister is not ready (ErrNotReady) nothing changes.
func (s *DLQSampler) Sample(ctx context.Context) error {
	infos, err := s.list(ctx)
	if errors.Is(err, ErrNotReady) {
		return err
	}
	var pending map[string]int64
	var severity map[string]string
	if err == nil {
		pending = make(map[string]int64, len(infos))
		severity = make(map[string]string, len(infos))
		for _, in := range infos {
			pending[in.DLQ] = in.Pending
			severity[in.DLQ] = in.Severity
		}
	}
	s.mu.Lock()
	s.pending, s.severity, s.at, s.err = pending, severity, time.Now(), err
	s.mu.Unlock()
	return err
}

// minDLQSampleTimeout bounds one sample from below: the first one opens
// the store (a PostgreSQL connection and its migrations), which a short
// Interval would cut off every time on a busy host.
const minDLQSampleTimeout = 5 * time.Second

// Run samples now and then every Interval until ctx ends, and returns nil
// then; a sample may take up to max(Interval, 5 s). Failures are logged
// once per outage.
func (s *DLQSampler) Run(ctx context.Context) error {
	return sampling.Loop{Interval: s.cfg.Interval, Timeout: max(s.cfg.Interval, minDLQSampleTimeout), Sample: s.Sample,
		Ignore: func(err error) bool { return errors.Is(err, ErrNotReady) },
		Down: func(err error) {
			s.cfg.Logger.Warn("exporter: dlq pending counts cannot be read; withheld until they can", "err", err)
		},
		Up: func() { s.cfg.Logger.Info("exporter: dlq pending counts readable again") },
	}.Run(ctx)
}

// Last returns a copy of the last counts, when they were taken and the
// error; zero values before the first sample.
func (s *DLQSampler) Last() (pending map[string]int64, at time.Time, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.pending), s.at, s.err
}

// Describe implements prometheus.Collector.
func (s *DLQSampler) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

// Collect implements prometheus.Collector from the cached counts.
func (s *DLQSampler) Collect(ch chan<- prometheus.Metric) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name, n := range s.pending {
		m, err := prometheus.NewConstMetric(s.desc, prometheus.GaugeValue, float64(n), name, s.severity[name])
		if err != nil {
			m = prometheus.NewInvalidMetric(s.desc, err)
		}
		ch <- m
	}
}
