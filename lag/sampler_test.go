package lag

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func wantValue(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := testenv.Gauge(fams, name, labels)
	if !ok || got != want {
		t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
	}
}

func TestSamplerScrape(t *testing.T) {
	e := newKafka(t)
	old := time.Now().Add(-90 * time.Second).Truncate(time.Millisecond)
	e.produce(t, 0, 10, old)
	e.produce(t, 1, 4, old)
	e.commit(t, "payout-executor", map[int32]int64{0: 3, 1: 4})
	ch := rabbitChannel(t)
	q := declareQueue(t, ch, 5)

	k := e.measurer(t, "payout-executor")
	tr, _ := NewTracker(TrackerConfig{Thresholds: Thresholds{topic: {Warning: 5, Critical: 100}}})
	s, err := NewSampler(SamplerConfig{Monitor: both{k, newDepth(t, testenv.RabbitMQ.URL(), q, q+".absent")}, Source: "both", Tracker: tr})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if fams := testenv.Scrape(t, reg); len(fams) != 0 {
		t.Fatalf("before the first sample: %d families, want none", len(fams))
	}
	if err := s.Sample(t.Context()); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	fams := testenv.Scrape(t, reg)
	gt := map[string]string{"group": "payout-executor", "topic": topic}
	wantValue(t, fams, MetricKafkaLag, gt, 7)
	wantValue(t, fams, MetricKafkaLagPartition, map[string]string{"group": "payout-executor", "topic": topic, "partition": "0"}, 7)
	wantValue(t, fams, MetricKafkaLagPartition, map[string]string{"group": "payout-executor", "topic": topic, "partition": "1"}, 0)
	wantValue(t, fams, MetricConsumerStatus, map[string]string{"group": "payout-executor", "topic": topic, "status": "stop", "level": "warning"}, 1)
	wantValue(t, fams, MetricQueueDepth, map[string]string{"queue": q}, 5)
	wantValue(t, fams, MetricQueueConsumers, map[string]string{"queue": q}, 0)
	wantValue(t, fams, MetricUp, map[string]string{"source": "both"}, 1)
	rep, _ := s.LastGroups()
	secs, ok := testenv.Gauge(fams, MetricKafkaLagSeconds, gt)
	if want := rep.At.Sub(old).Seconds(); !ok || secs < want-0.01 || secs > want+0.01 {
		t.Errorf("%s = %v (present %v), want %v", MetricKafkaLagSeconds, secs, ok, want)
	}
	if _, ok := testenv.Gauge(fams, MetricQueueDepth, map[string]string{"queue": q + ".absent"}); ok {
		t.Error("a missing queue is exported")
	}
	if n := len(fams[MetricKafkaLagPartition].GetMetric()); n != 3 {
		t.Errorf("%d partition series, want 3 (one per partition of the topic)", n)
	}
}

// A failing source withholds its series and reads redrive_lag_up 0; Run
// logs the outage once and returns when its context ends.
func TestSamplerFailureAndRun(t *testing.T) {
	logs := &testenv.Logs{}
	r := newDepth(t, "amqp://guest:guest@"+testenv.ClosedAddr(t)+"/", "q")
	s, err := NewSampler(SamplerConfig{Monitor: r, Source: "rabbitmq", Interval: 10 * time.Millisecond, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	first := time.Time{}
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, at, err := s.LastDepths()
		if first.IsZero() && !at.IsZero() {
			first = at
		}
		if !first.IsZero() && at.After(first) {
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("LastDepths error = %v, want ErrUnavailable", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fewer than two samples within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	fams := testenv.Scrape(t, reg)
	wantValue(t, fams, MetricUp, map[string]string{"source": "rabbitmq"}, 0)
	if len(fams) != 1 {
		t.Errorf("families during an outage: %v, want only %s", fams, MetricUp)
	}
	if n := logs.Count(slog.LevelWarn, "sampling failed"); n != 1 {
		t.Errorf("outage logged %d times, want once: %q", n, logs.All())
	}
	if _, err := NewSampler(SamplerConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewSampler without sources = %v", err)
	}
}
