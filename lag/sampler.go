package lag

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/sampling"
)

// DefaultSampleInterval is the SamplerConfig.Interval default.
const DefaultSampleInterval = 30 * time.Second

// Metric names a Sampler exports.
const (
	MetricKafkaLag          = "kafka_consumer_lag"
	MetricKafkaLagPartition = "kafka_consumer_lag_partition"
	MetricKafkaLagSeconds   = "kafka_consumer_lag_seconds"
	MetricConsumerStatus    = "redrive_consumer_status"
	MetricQueueDepth        = "rabbitmq_queue_depth"
	MetricQueueConsumers    = "rabbitmq_queue_consumers"
	MetricUp                = "redrive_lag_up"
)

// metricHelp is the help of each metric.
var metricHelp = map[string]string{
	MetricKafkaLag:          "Records a consumer group is behind on a topic (sum over partitions).",
	MetricKafkaLagPartition: "Records a consumer group is behind on one partition.",
	MetricKafkaLagSeconds:   "Age in seconds of the oldest record a consumer group has not consumed on a topic (max over partitions).",
	MetricConsumerStatus:    "1 for the state of a consumer group on a topic: status over the sample window (ok, warn = lag growing, stall = offset not moving, stop = consumer gone, rewind = offset went back) and level of its lag against the topic's thresholds (ok, warning, critical).",
	MetricQueueDepth:        "Messages ready in a RabbitMQ queue (unacknowledged deliveries not included).",
	MetricQueueConsumers:    "Consumers of a RabbitMQ queue.",
	MetricUp:                "1 when the last lag sample of the source succeeded, 0 when it failed.",
}

// SamplerConfig configures a Sampler.
type SamplerConfig struct {
	// Interval between samples; default 30 s.
	Interval time.Duration
	// Monitor measures the backend: its consumer groups' lag when it is a
	// driver.GroupLagMonitor, its queues' depth when it is a
	// driver.DepthMonitor, both when it is both (the backend descriptor's
	// Monitor opens it). Required.
	Monitor driver.Monitor
	// Source is the backend's name, the value of redrive_lag_up's source
	// label ("kafka", "rabbitmq"). Required.
	Source string
	// Tracker grades group lag samples; default a tracker with the
	// default window and no thresholds.
	Tracker *Tracker
	// Logger receives failed samples, once per outage of each source;
	// default slog.Default().
	Logger *slog.Logger
	// HistoryPoints is how many samples History keeps per series, the
	// newest (memory: about 32 bytes a point); default
	// DefaultHistoryPoints.
	HistoryPoints int
	// HistorySeries is how many series (consumer groups, queues) History
	// keeps of each kind; further ones are left out. Default
	// DefaultHistorySeries.
	HistorySeries int
}

// Sampler measures on an interval and keeps the last sample of each
// source. Each sample is turned once into its Prometheus metric families,
// sorted as a registry sorts them; a scrape reads them and costs no broker
// request and no per-series work. Serve them as a prometheus.Gatherer next
// to your registry (the cheap way, for many series):
//
//	s, err := lag.NewSampler(lag.SamplerConfig{Kafka: k, Tracker: tr})
//	h := promhttp.HandlerFor(prometheus.Gatherers{reg, s}, promhttp.HandlerOpts{})
//	go s.Run(ctx)
//
// or register it on the registry as a prometheus.Collector
// (reg.MustRegister(s)), which copies the cached series into the registry
// on each scrape. Encoded serves the families already encoded, once per
// sample and exposition format, for an HTTP handler of one's own (see
// internal/assembly/exporter).
type Sampler struct {
	cfg SamplerConfig
	// groupMon and depthMon are cfg.Monitor as what it measures; nil
	// when it does not.
	groupMon driver.GroupLagMonitor
	depthMon driver.DepthMonitor

	// buildMu serializes the building of pages and guards scraped, the
	// generation of the last page each format was scraped from; page is
	// the last one.
	buildMu sync.Mutex
	scraped map[expfmt.Format]uint64
	page    atomic.Pointer[page]

	mu          sync.RWMutex
	groups      GroupReport
	groupsErr   error
	groupsOnce  bool
	depths      []QueueDepth
	depthsAt    time.Time
	depthsErr   error
	depthsOnce  bool
	outage      sampling.Outage
	hist        histories
	lagDesc     *prometheus.Desc
	partDesc    *prometheus.Desc
	secondsDesc *prometheus.Desc
	statusDesc  *prometheus.Desc
	depthDesc   *prometheus.Desc
	consDesc    *prometheus.Desc
	upDesc      *prometheus.Desc
}

// Validate returns nil when c is usable, else an error wrapping
// ErrInvalidConfig that names the first field that is not.
func (c SamplerConfig) Validate() error {
	_, groups := c.Monitor.(driver.GroupLagMonitor)
	_, depths := c.Monitor.(driver.DepthMonitor)
	switch {
	case c.Monitor == nil:
		return fmt.Errorf("%w: SamplerConfig.Monitor: required", ErrInvalidConfig)
	case !groups && !depths:
		return fmt.Errorf("%w: SamplerConfig.Monitor: a %T measures neither group lag nor queue depth", ErrInvalidConfig, c.Monitor)
	case c.Source == "":
		return fmt.Errorf("%w: SamplerConfig.Source: required (the backend's name)", ErrInvalidConfig)
	case c.Interval < 0:
		return fmt.Errorf("%w: SamplerConfig.Interval: must be >= 0, got %s", ErrInvalidConfig, c.Interval)
	case c.HistoryPoints < 0:
		return fmt.Errorf("%w: SamplerConfig.HistoryPoints: must be >= 0, got %d", ErrInvalidConfig, c.HistoryPoints)
	case c.HistorySeries < 0:
		return fmt.Errorf("%w: SamplerConfig.HistorySeries: must be >= 0, got %d", ErrInvalidConfig, c.HistorySeries)
	}
	return nil
}

// NewSampler returns a sampler for cfg; it samples nothing until Sample or
// Run is called.
func NewSampler(cfg SamplerConfig) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSampleInterval
	}
	if cfg.Tracker == nil {
		cfg.Tracker, _ = NewTracker(TrackerConfig{})
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	hist, err := newHistories(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	gt := []string{"group", "topic"}
	s := &Sampler{
		hist:        hist,
		cfg:         cfg,
		scraped:     map[expfmt.Format]uint64{},
		lagDesc:     prometheus.NewDesc(MetricKafkaLag, metricHelp[MetricKafkaLag], gt, nil),
		partDesc:    prometheus.NewDesc(MetricKafkaLagPartition, metricHelp[MetricKafkaLagPartition], []string{"group", "topic", "partition"}, nil),
		secondsDesc: prometheus.NewDesc(MetricKafkaLagSeconds, metricHelp[MetricKafkaLagSeconds], gt, nil),
		statusDesc:  prometheus.NewDesc(MetricConsumerStatus, metricHelp[MetricConsumerStatus], []string{"group", "topic", "status", "level"}, nil),
		depthDesc:   prometheus.NewDesc(MetricQueueDepth, metricHelp[MetricQueueDepth], []string{"queue"}, nil),
		consDesc:    prometheus.NewDesc(MetricQueueConsumers, metricHelp[MetricQueueConsumers], []string{"queue"}, nil),
		upDesc:      prometheus.NewDesc(MetricUp, metricHelp[MetricUp], []string{"source"}, nil),
	}
	s.groupMon, _ = cfg.Monitor.(driver.GroupLagMonitor)
	s.depthMon, _ = cfg.Monitor.(driver.DepthMonitor)
	s.page.Store(&page{enc: map[expfmt.Format]*encoded{}})
	return s, nil
}

// Sample measures what the monitor measures now and caches the results.
// A measurement that fails keeps no stale values: its series disappear
// and redrive_lag_up reads 0. It returns the measurements' errors joined.
func (s *Sampler) Sample(ctx context.Context) error {
	var errs []error
	if s.groupMon != nil {
		sample, err := s.groupMon.MeasureGroups(ctx)
		var rep GroupReport
		if err == nil {
			rep = s.cfg.Tracker.Observe(sample)
			s.hist.recordGroups(rep)
		}
		s.mu.Lock()
		s.groups, s.groupsErr, s.groupsOnce = rep, err, true
		s.mu.Unlock()
		errs = append(errs, err)
	}
	if s.depthMon != nil {
		depths, err := s.depthMon.MeasureDepth(ctx)
		if err != nil {
			depths = nil
		}
		at := time.Now()
		if err == nil {
			s.hist.recordDepths(at, depths)
		}
		s.mu.Lock()
		s.depths, s.depthsAt, s.depthsErr, s.depthsOnce = depths, at, err, true
		s.mu.Unlock()
		errs = append(errs, err)
	}
	s.rebuild()
	return errors.Join(errs...)
}

// Run samples now and then every Interval until ctx ends, and returns nil
// then. Failures are logged once per outage.
func (s *Sampler) Run(ctx context.Context) error {
	return sampling.Loop{Interval: s.cfg.Interval, Sample: func(sctx context.Context) error {
		_ = s.Sample(sctx)
		if ctx.Err() == nil {
			s.logTransitions()
		}
		return nil // the outage is logged by logTransitions
	}}.Run(ctx)
}

// logTransitions logs an outage once, at its start and end.
func (s *Sampler) logTransitions() {
	s.mu.RLock()
	err := s.lastErr()
	s.mu.RUnlock()
	switch began, ended := s.outage.Observe(err); {
	case began:
		s.cfg.Logger.Warn("lag: sampling failed; its metrics are withheld until it recovers", "source", s.cfg.Source, "err", err)
	case ended:
		s.cfg.Logger.Info("lag: sampling recovered", "source", s.cfg.Source)
	}
}

// lastErr is the last sample's error: its measurements' joined; s.mu is
// held.
func (s *Sampler) lastErr() error { return errors.Join(s.groupsErr, s.depthsErr) }

// Groups reports whether the sampler measures group lag (LastGroups);
// Depths whether it measures queue depth (LastDepths).
func (s *Sampler) Groups() bool { return s.groupMon != nil }

// Depths reports whether the sampler measures queue depth (LastDepths).
func (s *Sampler) Depths() bool { return s.depthMon != nil }

// Source is the backend's name (SamplerConfig.Source).
func (s *Sampler) Source() string { return s.cfg.Source }

// LastGroups returns the last group lag report and its error.
func (s *Sampler) LastGroups() (GroupReport, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.groups, s.groupsErr
}

// LastDepths returns the last queue depths, when they were taken and the
// error.
func (s *Sampler) LastDepths() ([]QueueDepth, time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.depths, s.depthsAt, s.depthsErr
}

// Describe implements prometheus.Collector.
func (s *Sampler) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.lagDesc, s.partDesc, s.secondsDesc, s.statusDesc, s.depthDesc, s.consDesc, s.upDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it sends the series of the
// last page (see Gather), without rebuilding them.
func (s *Sampler) Collect(ch chan<- prometheus.Metric) {
	for _, f := range s.page.Load().fams {
		d := s.desc(f.GetName())
		for _, m := range f.Metric {
			ch <- cachedMetric{d, m}
		}
	}
}

func (s *Sampler) desc(name string) *prometheus.Desc {
	switch name {
	case MetricKafkaLag:
		return s.lagDesc
	case MetricKafkaLagPartition:
		return s.partDesc
	case MetricKafkaLagSeconds:
		return s.secondsDesc
	case MetricConsumerStatus:
		return s.statusDesc
	case MetricQueueDepth:
		return s.depthDesc
	case MetricQueueConsumers:
		return s.consDesc
	default:
		return s.upDesc
	}
}

// cachedMetric is a series of a page as a prometheus.Metric; Write shares
// the page's (read-only) labels and value.
type cachedMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

func (c cachedMetric) Desc() *prometheus.Desc { return c.desc }

func (c cachedMetric) Write(out *dto.Metric) error {
	out.Label, out.Gauge = c.m.Label, c.m.Gauge
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
