package heartbeat

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/internal/sampling"
	"github.com/redrive/redrive/internal/timeseries"
)

// DefaultSampleInterval is the SamplerConfig.Interval default.
const DefaultSampleInterval = 15 * time.Second

// Metric names a Sampler exports.
const (
	MetricHeartbeatTimestamp = "worker_heartbeat_timestamp_seconds"
	MetricWorkerStatus       = "redrive_worker_status"
	MetricRunningInstances   = "redrive_worker_running_instances"
	MetricWorkerPaused       = "redrive_worker_paused"
	MetricInstancesDropped   = "redrive_worker_instances_dropped"
	MetricInstancesLimit     = "redrive_worker_instances_limit"
)

// LabelInstance is the label of a worker instance on the sampler's series.
// It is not "instance": Prometheus owns that label (the scrape target's
// address) and would rename ours to exported_instance under a default
// scrape config.
const LabelInstance = "worker_instance"

// Worker is a configured worker type: the sampler exports its number of
// running instances even when it has none.
type Worker struct {
	// Type is the worker name (its consumer group).
	Type string
	// DLQSeverity is the severity of its dead letters (critical for
	// money-moving workers), the dlq_severity label of
	// redrive_worker_running_instances.
	DLQSeverity string
}

// SamplerConfig configures a Sampler.
type SamplerConfig struct {
	// Interval between checks; default 15 s.
	Interval time.Duration
	// Logger receives failed checks, once per outage; default slog.Default().
	Logger *slog.Logger
	// Workers are the configured worker types; each gets a
	// redrive_worker_running_instances series, 0 when none of its
	// instances runs. Types seen in Redis but not listed get none.
	Workers []Worker
	// HistoryPoints is how many samples History keeps of each state (six
	// series; about 32 bytes a point); default DefaultHistoryPoints.
	HistoryPoints int
}

// Sampler runs a Monitor on an interval and keeps the last table, which it
// serves to Prometheus as a prometheus.Collector: a scrape reads the cache
// and costs no Redis round trip. Register it on the registry of your
// exporter (never the global one is needed):
//
//	s, err := heartbeat.NewSampler(mon, heartbeat.SamplerConfig{})
//	if err != nil { ... }
//	reg.MustRegister(s)
//	go s.Run(ctx)
type Sampler struct {
	mon *Monitor
	cfg SamplerConfig

	mu      sync.RWMutex
	rows    []WorkerStatus
	at      time.Time
	err     error
	dropped Dropped
	hist    *timeseries.History

	tsDesc      *prometheus.Desc
	statusDesc  *prometheus.Desc
	runningDesc *prometheus.Desc
	pausedDesc  *prometheus.Desc
	droppedDesc *prometheus.Desc
	limitDesc   *prometheus.Desc
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c SamplerConfig) Validate() error {
	if c.Interval < 0 {
		return fmt.Errorf("heartbeat: SamplerConfig.Interval: must be >= 0, got %s", c.Interval)
	}
	if c.HistoryPoints < 0 {
		return fmt.Errorf("heartbeat: SamplerConfig.HistoryPoints: must be >= 0, got %d", c.HistoryPoints)
	}
	for i, w := range c.Workers {
		if w.Type == "" {
			return fmt.Errorf("heartbeat: SamplerConfig.Workers[%d]: no type", i)
		}
	}
	return nil
}

// NewSampler returns a sampler of mon, or cfg's Validate error; it samples
// nothing until Sample or Run is called.
func NewSampler(mon *Monitor, cfg SamplerConfig) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSampleInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HistoryPoints == 0 {
		cfg.HistoryPoints = DefaultHistoryPoints
	}
	hist, err := timeseries.New(timeseries.Config{Points: cfg.HistoryPoints, MaxSeries: len(ChartStates)})
	if err != nil {
		return nil, err
	}
	return &Sampler{
		mon:  mon,
		hist: hist,
		cfg:  cfg,
		tsDesc: prometheus.NewDesc(MetricHeartbeatTimestamp,
			"Unix time of the last heartbeat of a worker instance (kept after its key expired, until forgotten).",
			[]string{"type", LabelInstance}, nil),
		statusDesc: prometheus.NewDesc(MetricWorkerStatus,
			"1 for each condition a worker instance meets (ok, paused, late, missing, stuck, lag_warning, lag_critical, shutting_down, shutdown_stuck, malformed, unknown), labelled with the condition's severity.",
			[]string{"type", LabelInstance, "condition", "severity"}, nil),
		runningDesc: prometheus.NewDesc(MetricRunningInstances,
			"Instances of a configured worker type that beat RUNNING or PAUSED within heartbeat.missing_after (stuck, lagging or paused ones included: redrive_worker_paused tells the paused), as of the last sample.",
			[]string{"type", "dlq_severity"}, nil),
		pausedDesc: prometheus.NewDesc(MetricWorkerPaused,
			"1 for each worker instance that beats PAUSED: reason operator (redrive workers pause) or kill_switch (its kill switch tripped); dlq_severity is the configured worker's.",
			[]string{"type", LabelInstance, "reason", "dlq_severity"}, nil),
		droppedDesc: prometheus.NewDesc(MetricInstancesDropped,
			"Worker instances the last sample left out: reason over_limit (beyond heartbeat.max_instances; configured workers are read first) or bad_name (a name or registry key no worker can have), as of the last sample.",
			[]string{"reason"}, nil),
		limitDesc: prometheus.NewDesc(MetricInstancesLimit,
			"The most worker instances a sample reads (heartbeat.max_instances).",
			nil, nil),
	}, nil
}

// Sample runs one check now and caches its rows (UNKNOWN rows when Redis
// cannot be read, see Monitor.Check). It returns the check's error.
func (s *Sampler) Sample(ctx context.Context) error {
	rows, err := s.mon.Check(ctx)
	at := time.Now()
	s.mu.Lock()
	before := s.dropped
	if err == nil {
		s.dropped = s.mon.Dropped()
	}
	after := s.dropped
	s.rows, s.at, s.err = rows, at, err
	s.mu.Unlock()
	if err == nil {
		s.recordHistory(at, rows)
		s.logDropped(before, after)
	}
	return err
}

// logDropped says when a sample begins or stops leaving instances out,
// and when what it leaves out changes.
func (s *Sampler) logDropped(before, after Dropped) {
	switch {
	case after.OverLimit == before.OverLimit && after.BadNames == before.BadNames:
	case after.Total() == 0:
		s.cfg.Logger.Info("heartbeat: every worker instance is read again")
	default:
		s.cfg.Logger.Warn("heartbeat: worker instances left out of the table, /healthz and /metrics",
			"over_limit", after.OverLimit, "limit", after.Limit, "bad_name", after.BadNames,
			"hint", "raise heartbeat.max_instances, or look for what writes these keys (redis.prefix isolates applications)")
	}
}

// Dropped returns what the last sample left out (see Monitor.Dropped).
func (s *Sampler) Dropped() Dropped {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dropped
}

// Run samples now and then every Interval until ctx ends, and returns nil
// then. Failed checks are logged once per outage.
func (s *Sampler) Run(ctx context.Context) error {
	return sampling.Loop{Interval: s.cfg.Interval, Sample: s.Sample,
		Down: func(err error) {
			s.cfg.Logger.Warn("heartbeat: monitor cannot read redis; workers read UNKNOWN", "err", err)
		},
		Up: func() { s.cfg.Logger.Info("heartbeat: monitor reads redis again") },
	}.Run(ctx)
}

// Last returns the rows of the last sample, when it was taken and its
// error; zero values before the first sample. Like `redrive workers`, it
// has a MISSING row (instance NeverSeenInstance) for every configured
// worker of which no heartbeat was seen (WithExpected), unless Redis
// could not be read.
func (s *Sampler) Last() ([]WorkerStatus, time.Time, error) {
	s.mu.RLock()
	rows, at, err := s.rows, s.at, s.err
	s.mu.RUnlock()
	if at.IsZero() || err != nil || len(s.cfg.Workers) == 0 {
		return rows, at, err
	}
	types := make([]string, len(s.cfg.Workers))
	for i, w := range s.cfg.Workers {
		types[i] = w.Type
	}
	return WithExpected(rows, types, at), at, nil
}

// Describe implements prometheus.Collector.
func (s *Sampler) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.tsDesc
	ch <- s.statusDesc
	ch <- s.runningDesc
	ch <- s.pausedDesc
	ch <- s.droppedDesc
	ch <- s.limitDesc
}

// Collect implements prometheus.Collector from the cached sample.
// worker_heartbeat_timestamp_seconds is left out for rows of severity
// UNKNOWN, so a Redis outage does not read as missing workers; so is
// redrive_worker_running_instances before the first sample and while Redis
// cannot be read.
func (s *Sampler) Collect(ch chan<- prometheus.Metric) {
	s.mu.RLock()
	rows, at, err, dropped := s.rows, s.at, s.err, s.dropped
	s.mu.RUnlock()
	if !at.IsZero() {
		ch <- constMetric(s.limitDesc, prometheus.GaugeValue, float64(s.mon.cfg.MaxInstances))
	}
	if !at.IsZero() && err == nil {
		ch <- constMetric(s.droppedDesc, prometheus.GaugeValue, float64(dropped.OverLimit), "over_limit")
		ch <- constMetric(s.droppedDesc, prometheus.GaugeValue, float64(dropped.BadNames), "bad_name")
		running := make(map[string]int, len(s.cfg.Workers))
		for _, r := range rows {
			if r.Running() || r.Paused() {
				running[r.Type]++
			}
		}
		for _, w := range s.cfg.Workers {
			ch <- constMetric(s.runningDesc, prometheus.GaugeValue, float64(running[w.Type]), w.Type, w.DLQSeverity)
		}
	}
	severity := make(map[string]string, len(s.cfg.Workers))
	for _, w := range s.cfg.Workers {
		severity[w.Type] = w.DLQSeverity
	}
	for _, r := range rows {
		if r.Status == StatusPaused && slices.Contains(r.Conditions, ConditionPaused) {
			by := r.PausedBy
			if by != PausedByOperator && by != PausedByKillSwitch {
				by = "unknown" // a label value from Redis: bounded
			}
			ch <- constMetric(s.pausedDesc, prometheus.GaugeValue, 1, r.Type, r.Instance, by, severity[r.Type])
		}
		if r.Severity != SeverityUnknown && !r.LastSeen.IsZero() {
			ch <- constMetric(s.tsDesc, prometheus.GaugeValue, float64(r.LastSeen.UnixMilli())/1e3, r.Type, r.Instance)
		}
		for _, c := range r.Conditions {
			ch <- constMetric(s.statusDesc, prometheus.GaugeValue, 1, r.Type, r.Instance, string(c), c.Severity().Label())
		}
	}
}

func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
