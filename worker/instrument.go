package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/promshare"
)

// metrics are the runtime's collectors.
type metrics struct {
	duration *prometheus.HistogramVec
	retries  *prometheus.CounterVec
	trips    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "worker_handler_duration_seconds",
			Help:    "Time handlers took, by worker.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9), // 1 ms .. 65 s
		}, []string{"worker"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worker_retry_total",
			Help: "Handler failures that were scheduled for a retry, by worker and error class.",
		}, []string{"worker", "error_class"}),
		trips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "worker_kill_switch_trips_total",
			Help: "Times a worker's kill switch opened (tripped, or a failed probe opened it again), by worker.",
		}, []string{"worker"}),
	}
	// Several runtimes may share one registry: they then share its
	// collectors, so that no runtime's observations are lost.
	var err error
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.retries, err = register(reg, m.retries); err != nil {
		return nil, err
	}
	if m.trips, err = register(reg, m.trips); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c with reg, or returns the collector of the same
// description registered before (several runtimes on one registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promshare.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("worker: register metrics: %w", err)
	}
	return c, nil
}

// instrument wraps h to time it, count retries and report activity to the
// heartbeat publisher (either may be nil).
func instrument(s broker.Subscription, h broker.Handler, m *metrics, pub *heartbeat.Publisher) broker.Handler {
	if m == nil && pub == nil {
		return h
	}
	var obs prometheus.Observer
	if m != nil {
		obs = m.duration.WithLabelValues(s.Group)
	}
	return func(ctx context.Context, d *broker.Delivery) error {
		start := time.Now()
		err := h(ctx, d)
		end := time.Now()
		if obs != nil {
			obs.Observe(end.Sub(start).Seconds())
		}
		if pub != nil {
			pub.MessageHandled(end)
		}
		if err != nil && m != nil && !broker.IsRequeue(err) {
			if o := driver.Decide(s, d, err, end); o.Retry {
				m.retries.WithLabelValues(s.Group, o.Class).Inc()
			}
		}
		return err
	}
}
