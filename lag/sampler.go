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

	"github.com/redrive/redrive/broker"
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

// Sources, the values of redrive_lag_up's source label.
const (
	SourceKafka    = string(broker.Kafka)
	SourceRabbitMQ = string(broker.RabbitMQ)
)

// SamplerConfig configures a Sampler; at least one of Kafka and Rabbit is
// required.
type SamplerConfig struct {
	// Interval between samples; default 30 s.
	Interval time.Duration
	// Kafka measures consumer groups; nil = no Kafka.
	Kafka *Kafka
	// Tracker grades Kafka samples; default a tracker with the default
	// window and no thresholds.
	Tracker *Tracker
	// Rabbit measures RabbitQueues. Default nil: no RabbitMQ.
	Rabbit *Rabbit
	// RabbitQueues are the queues Rabbit measures. Default none.
	RabbitQueues []string
	// RabbitRoles gives the depths their Role (see RabbitRoles); a queue
	// not in it has none.
	RabbitRoles map[string]QueueRole
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
// internal/exporter).
type Sampler struct {
	cfg SamplerConfig

	// buildMu serializes the building of pages and guards scraped, the
	// generation of the last page each format was scraped from; page is
	// the last one.
	buildMu sync.Mutex
	scraped map[expfmt.Format]uint64
	page    atomic.Pointer[page]

	mu          sync.RWMutex
	kafka       KafkaReport
	kafkaErr    error
	kafkaOnce   bool
	rabbit      []QueueDepth
	rabbitAt    time.Time
	rabbitErr   error
	rabbitOnce  bool
	outages     map[string]*sampling.Outage // by source
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
	switch {
	case c.Kafka == nil && c.Rabbit == nil:
		return fmt.Errorf("%w: SamplerConfig.Kafka, SamplerConfig.Rabbit: the sampler needs one", ErrInvalidConfig)
	case c.Interval < 0:
		return fmt.Errorf("%w: SamplerConfig.Interval: must be >= 0, got %s", ErrInvalidConfig, c.Interval)
	case c.HistoryPoints < 0:
		return fmt.Errorf("%w: SamplerConfig.HistoryPoints: must be >= 0, got %d", ErrInvalidConfig, c.HistoryPoints)
	case c.HistorySeries < 0:
		return fmt.Errorf("%w: SamplerConfig.HistorySeries: must be >= 0, got %d", ErrInvalidConfig, c.HistorySeries)
	case c.Rabbit == nil && len(c.RabbitQueues) > 0:
		return fmt.Errorf("%w: SamplerConfig.RabbitQueues: set without SamplerConfig.Rabbit", ErrInvalidConfig)
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
	if cfg.Kafka != nil && cfg.Tracker == nil {
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
		outages:     map[string]*sampling.Outage{SourceKafka: {}, SourceRabbitMQ: {}},
		scraped:     map[expfmt.Format]uint64{},
		lagDesc:     prometheus.NewDesc(MetricKafkaLag, metricHelp[MetricKafkaLag], gt, nil),
		partDesc:    prometheus.NewDesc(MetricKafkaLagPartition, metricHelp[MetricKafkaLagPartition], []string{"group", "topic", "partition"}, nil),
		secondsDesc: prometheus.NewDesc(MetricKafkaLagSeconds, metricHelp[MetricKafkaLagSeconds], gt, nil),
		statusDesc:  prometheus.NewDesc(MetricConsumerStatus, metricHelp[MetricConsumerStatus], []string{"group", "topic", "status", "level"}, nil),
		depthDesc:   prometheus.NewDesc(MetricQueueDepth, metricHelp[MetricQueueDepth], []string{"queue"}, nil),
		consDesc:    prometheus.NewDesc(MetricQueueConsumers, metricHelp[MetricQueueConsumers], []string{"queue"}, nil),
		upDesc:      prometheus.NewDesc(MetricUp, metricHelp[MetricUp], []string{"source"}, nil),
	}
	s.page.Store(&page{enc: map[expfmt.Format]*encoded{}})
	return s, nil
}

// Sample measures every configured source now and caches the results. A
// source that fails keeps no stale values: its series disappear and
// redrive_lag_up reads 0. It returns the sources' errors joined.
func (s *Sampler) Sample(ctx context.Context) error {
	var errs []error
	if s.cfg.Kafka != nil {
		sample, err := s.cfg.Kafka.Measure(ctx)
		var rep KafkaReport
		if err == nil {
			rep = s.cfg.Tracker.Observe(sample)
			s.hist.recordKafka(rep)
		}
		s.mu.Lock()
		s.kafka, s.kafkaErr, s.kafkaOnce = rep, err, true
		s.mu.Unlock()
		errs = append(errs, err)
	}
	if s.cfg.Rabbit != nil {
		depths, err := s.cfg.Rabbit.Measure(ctx, s.cfg.RabbitQueues...)
		if err != nil {
			depths = nil
		}
		for i := range depths {
			depths[i].Role = s.cfg.RabbitRoles[depths[i].Queue]
		}
		at := time.Now()
		if err == nil {
			s.hist.recordRabbit(at, depths)
		}
		s.mu.Lock()
		s.rabbit, s.rabbitAt, s.rabbitErr, s.rabbitOnce = depths, at, err, true
		s.mu.Unlock()
		errs = append(errs, err)
	}
	s.rebuild()
	return errors.Join(errs...)
}

// Run samples now and then every Interval until ctx ends, and returns nil
// then. Failures are logged once per outage of each source.
func (s *Sampler) Run(ctx context.Context) error {
	return sampling.Loop{Interval: s.cfg.Interval, Sample: func(sctx context.Context) error {
		_ = s.Sample(sctx)
		if ctx.Err() == nil {
			s.logTransitions()
		}
		return nil // each source's outage is logged by logTransitions
	}}.Run(ctx)
}

// logTransitions logs each source's outage once, at its start and end.
func (s *Sampler) logTransitions() {
	s.mu.RLock()
	errs := map[string]error{}
	if s.cfg.Kafka != nil {
		errs[SourceKafka] = s.kafkaErr
	}
	if s.cfg.Rabbit != nil {
		errs[SourceRabbitMQ] = s.rabbitErr
	}
	s.mu.RUnlock()
	for src, err := range errs {
		switch began, ended := s.outages[src].Observe(err); {
		case began:
			s.cfg.Logger.Warn("lag: sampling failed; its metrics are withheld until it recovers", "source", src, "err", err)
		case ended:
			s.cfg.Logger.Info("lag: sampling recovered", "source", src)
		}
	}
}

// LastKafka returns the last Kafka report and its error.
func (s *Sampler) LastKafka() (KafkaReport, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.kafka, s.kafkaErr
}

// LastRabbit returns the last RabbitMQ depths, when they were taken and
// the error.
func (s *Sampler) LastRabbit() ([]QueueDepth, time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rabbit, s.rabbitAt, s.rabbitErr
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
