package lag

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/redrive/redrive/internal/testenv"
)

func scrape(t testing.TB, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return fams
}

// value returns the gauge name{labels} (labels exactly), and whether it is
// there.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func wantValue(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := value(fams, name, labels)
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

	k := e.measurer(t, KafkaConfig{Groups: []string{"payout-executor"}})
	tr, _ := NewTracker(TrackerConfig{Thresholds: Thresholds{topic: {Warning: 5, Critical: 100}}})
	s, err := NewSampler(SamplerConfig{Kafka: k, Tracker: tr, Rabbit: newRabbit(t, testenv.RabbitMQ.URL()), RabbitQueues: []string{q, q + ".absent"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if fams := scrape(t, reg); len(fams) != 0 {
		t.Fatalf("before the first sample: %d families, want none", len(fams))
	}
	if err := s.Sample(t.Context()); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	fams := scrape(t, reg)
	gt := map[string]string{"group": "payout-executor", "topic": topic}
	wantValue(t, fams, MetricKafkaLag, gt, 7)
	wantValue(t, fams, MetricKafkaLagPartition, map[string]string{"group": "payout-executor", "topic": topic, "partition": "0"}, 7)
	wantValue(t, fams, MetricKafkaLagPartition, map[string]string{"group": "payout-executor", "topic": topic, "partition": "1"}, 0)
	wantValue(t, fams, MetricConsumerStatus, map[string]string{"group": "payout-executor", "topic": topic, "status": "stop", "level": "warning"}, 1)
	wantValue(t, fams, MetricQueueDepth, map[string]string{"queue": q}, 5)
	wantValue(t, fams, MetricQueueConsumers, map[string]string{"queue": q}, 0)
	wantValue(t, fams, MetricUp, map[string]string{"source": "kafka"}, 1)
	wantValue(t, fams, MetricUp, map[string]string{"source": "rabbitmq"}, 1)
	rep, _ := s.LastKafka()
	secs, ok := value(fams, MetricKafkaLagSeconds, gt)
	if want := rep.At.Sub(old).Seconds(); !ok || secs < want-0.01 || secs > want+0.01 {
		t.Errorf("%s = %v (present %v), want %v", MetricKafkaLagSeconds, secs, ok, want)
	}
	if _, ok := value(fams, MetricQueueDepth, map[string]string{"queue": q + ".absent"}); ok {
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
	r := newRabbit(t, "amqp://guest:guest@"+testenv.ClosedAddr(t)+"/")
	s, err := NewSampler(SamplerConfig{Rabbit: r, RabbitQueues: []string{"q"}, Interval: 10 * time.Millisecond, Logger: slog.New(logs)})
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
		_, at, err := s.LastRabbit()
		if first.IsZero() && !at.IsZero() {
			first = at
		}
		if !first.IsZero() && at.After(first) {
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("LastRabbit error = %v, want ErrUnavailable", err)
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
	fams := scrape(t, reg)
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
