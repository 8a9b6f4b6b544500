package relay

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/promshare"
)

// Metric names.
const (
	MetricRequests        = "redrive_relay_requests_total"
	MetricRequestDuration = "redrive_relay_request_duration_seconds"
)

// buckets are the latency histogram's upper bounds in seconds, as the
// handler histogram's: 1 ms to 65 s by factors of 4.
var buckets = prometheus.ExponentialBuckets(0.001, 4, nBuckets)

const nBuckets = 9

// stats counts one endpoint's POSTs: in its own counters (the heartbeat's
// Stats) and, with a registerer, in the Prometheus collectors.
type stats struct {
	url      string
	counts   [len(outcomes)]atomic.Int64
	hist     [nBuckets + 1]atomic.Int64 // by bucket, the last one +Inf
	requests [len(outcomes)]prometheus.Counter
	duration prometheus.Observer
}

func newStats(url, worker string, reg prometheus.Registerer) (*stats, error) {
	s := &stats{url: url}
	if reg == nil {
		return s, nil
	}
	requests, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRequests,
		Help: "POSTs of redrive relay to a worker's HTTP endpoint, by worker, endpoint (without user, query or fragment) and outcome: success, permanent, retry_after, retry, timeout, unreachable, canceled.",
	}, []string{"worker", "endpoint", "outcome"}))
	if err != nil {
		return nil, err
	}
	duration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricRequestDuration,
		Help:    "Time the POSTs of redrive relay to a worker's HTTP endpoint took, from the request to the end of the answer read, by worker and endpoint.",
		Buckets: buckets,
	}, []string{"worker", "endpoint"}))
	if err != nil {
		return nil, err
	}
	for i, o := range outcomes {
		s.requests[i] = requests.WithLabelValues(worker, url, string(o)) // every series from the start, at 0
	}
	s.duration = duration.WithLabelValues(worker, url)
	return s, nil
}

// register registers c with reg, or returns the collector of the same
// description registered before (several endpoints share them).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	c, err := promshare.Register(reg, c)
	if err != nil {
		return c, fmt.Errorf("relay: register metrics: %w", err)
	}
	return c, nil
}

func (s *stats) observe(o Outcome, d time.Duration) {
	i := o.index()
	s.counts[i].Add(1)
	sec := d.Seconds()
	b := len(buckets)
	for j, ub := range buckets {
		if sec <= ub {
			b = j
			break
		}
	}
	s.hist[b].Add(1)
	if s.duration != nil {
		s.requests[i].Inc()
		s.duration.Observe(sec)
	}
}

// snapshot is what a heartbeat says about the endpoint.
func (s *stats) snapshot() *heartbeat.Endpoint {
	e := &heartbeat.Endpoint{URL: s.url, Outcomes: make(map[string]int64, len(outcomes))}
	for i, o := range outcomes {
		if n := s.counts[i].Load(); n > 0 {
			e.Outcomes[string(o)] = n
		}
	}
	var hist [nBuckets + 1]int64
	for i := range hist {
		hist[i] = s.hist[i].Load()
	}
	e.P50, e.P99 = quantile(hist[:], 0.5), quantile(hist[:], 0.99)
	return e
}

// quantile estimates the q-quantile of a histogram of counts per bucket
// (the last one above every bound), interpolating linearly inside its
// bucket as Prometheus's histogram_quantile does; the +Inf bucket reads as
// the largest bound.
func quantile(hist []int64, q float64) time.Duration {
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for i, n := range hist {
		if float64(seen+n) < rank || n == 0 {
			seen += n
			continue
		}
		if i == len(buckets) {
			return seconds(buckets[len(buckets)-1])
		}
		lo := 0.0
		if i > 0 {
			lo = buckets[i-1]
		}
		return seconds(lo + (buckets[i]-lo)*(rank-float64(seen))/float64(n))
	}
	return seconds(buckets[len(buckets)-1])
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
