package heartbeat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestSamplerScrape(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	live := newPublisher(t, rdb, PublisherConfig{Type: "payout-executor", Instance: "live", Prefix: prefix})
	live.SetLag(4)
	live.MessageHandled(time.Now().Add(-time.Hour))
	if err := live.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	paused := newPublisher(t, rdb, PublisherConfig{Type: "payout-executor", Instance: "paused", Prefix: prefix})
	paused.SetPaused(PausedByOperator, "bank maintenance", time.Time{})
	if err := paused.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	gone := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	keys := Keys{Prefix: prefix}
	rdb.ZAdd(ctx, keys.Registry("refund-executor"), redisZ(gone, "gone"))
	rdb.SAdd(ctx, keys.Types(), "refund-executor")

	px := tcpproxy.New(t, testenv.Redis.URL())
	m := newMonitor(t, client(t, px.Addr()), MonitorConfig{Prefix: prefix, IdleAfter: time.Minute})
	s := newSampler(t, m, SamplerConfig{Workers: []Worker{
		{Type: "payout-executor", DLQSeverity: "critical"},
		{Type: "refund-executor", DLQSeverity: "warning"},
		{Type: "idle-worker", DLQSeverity: "info"},
	}})
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if fams := testenv.Scrape(t, reg); len(fams) != 0 {
		t.Fatalf("before the first sample the scrape holds %d families, want none", len(fams))
	}
	if err := s.Sample(ctx); err != nil {
		t.Fatalf("Sample: %v", err)
	}
	fams := testenv.Scrape(t, reg)

	v, ok := testenv.Gauge(fams, MetricHeartbeatTimestamp, map[string]string{"type": "refund-executor", "worker_instance": "gone"})
	if !ok || v != float64(gone.UnixMilli())/1e3 {
		t.Errorf("timestamp of the expired worker = %v (present %v), want %v", v, ok, float64(gone.UnixMilli())/1e3)
	}
	v, ok = testenv.Gauge(fams, MetricHeartbeatTimestamp, map[string]string{"type": "payout-executor", "worker_instance": "live"})
	if !ok || time.Since(time.UnixMilli(int64(v*1e3))) > 5*time.Second {
		t.Errorf("timestamp of the live worker = %v (present %v), want about now", v, ok)
	}
	for _, want := range []map[string]string{
		{"type": "refund-executor", "worker_instance": "gone", "condition": "missing", "severity": "critical"},
		{"type": "payout-executor", "worker_instance": "live", "condition": "stuck", "severity": "warning"},
		{"type": "payout-executor", "worker_instance": "paused", "condition": "paused", "severity": "warning"},
	} {
		if v, ok := testenv.Gauge(fams, MetricWorkerStatus, want); !ok || v != 1 {
			t.Errorf("%s%v = %v (present %v), want 1", MetricWorkerStatus, want, v, ok)
		}
	}
	if n := len(fams[MetricWorkerStatus].GetMetric()); n != 3 {
		t.Errorf("%d %s series, want one per condition met (3)", n, MetricWorkerStatus)
	}
	want := map[string]string{"type": "payout-executor", "worker_instance": "paused", "reason": "operator", "dlq_severity": "critical"}
	if v, ok := testenv.Gauge(fams, MetricWorkerPaused, want); !ok || v != 1 || len(fams[MetricWorkerPaused].GetMetric()) != 1 {
		t.Errorf("%s%v = %v (present %v), want 1 and no other series", MetricWorkerPaused, want, v, ok)
	}
	// Every configured type has its count of running instances, 0
	// included; a stuck or paused instance runs, a missing one does not.
	for _, want := range []struct {
		typ, sev string
		n        float64
	}{{"payout-executor", "critical", 2}, {"refund-executor", "warning", 0}, {"idle-worker", "info", 0}} {
		if v, ok := testenv.Gauge(fams, MetricRunningInstances, map[string]string{"type": want.typ, "dlq_severity": want.sev}); !ok || v != want.n {
			t.Errorf("%s{type=%q} = %v (present %v), want %v", MetricRunningInstances, want.typ, v, ok, want.n)
		}
	}

	// Redis unreachable: no timestamps (no false "missing"), UNKNOWN status.
	px.SetUp(false)
	if err := s.Sample(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Sample during an outage: %v, want ErrUnavailable", err)
	}
	fams = testenv.Scrape(t, reg)
	if f := fams[MetricHeartbeatTimestamp]; f != nil {
		t.Errorf("timestamps exported while Redis is unreachable: %v", f)
	}
	if f := fams[MetricRunningInstances]; f != nil {
		t.Errorf("running instances exported while Redis is unreachable (every type would read 0): %v", f)
	}
	for _, inst := range []string{"gone", "live", "paused"} {
		typ := map[string]string{"gone": "refund-executor", "live": "payout-executor", "paused": "payout-executor"}[inst]
		if v, ok := testenv.Gauge(fams, MetricWorkerStatus, map[string]string{"type": typ, "worker_instance": inst, "condition": "unknown", "severity": "unknown"}); !ok || v != 1 {
			t.Errorf("%s/%s not UNKNOWN during the outage", typ, inst)
		}
	}
	rows, at, err := s.Last()
	if len(rows) != 3 || at.IsZero() || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Last() = %d rows, %s, %v", len(rows), at, err)
	}
}

func TestSamplerRunSamplesUntilCancelled(t *testing.T) {
	rdb, prefix := newRedis(t)
	p := newPublisher(t, rdb, PublisherConfig{Type: "w", Instance: "i", Prefix: prefix})
	if err := p.Beat(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := newSampler(t, newMonitor(t, rdb, MonitorConfig{Prefix: prefix}), SamplerConfig{Interval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	testenv.Eventually(t, 5*time.Second, "a first sample", func() bool {
		rows, _, _ := s.Last()
		return len(rows) == 1
	})
	_, first, _ := s.Last()
	testenv.Eventually(t, 5*time.Second, "a second sample", func() bool {
		_, at, _ := s.Last()
		return at.After(first)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}

// newSampler returns NewSampler(m, cfg), failing t on an error.
func newSampler(t *testing.T, m *Monitor, cfg SamplerConfig) *Sampler {
	t.Helper()
	s, err := NewSampler(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSamplerSameRowsAsTheCLI: Sampler.Last (what the console and
// /healthz show) holds, like `redrive workers`, a MISSING row for every
// configured worker never seen; the scrape has no series for it, and
// says what the sample left out and the limit.
func TestSamplerSameRowsAsTheCLI(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	v := `{"timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","status":"RUNNING"}`
	for _, inst := range []string{"a", "b", "c"} {
		rdb.Set(ctx, keys.Heartbeat("seen", inst), v, time.Minute)
	}
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MaxInstances: 2})
	s := newSampler(t, m, SamplerConfig{Workers: []Worker{{Type: "seen"}, {Type: "never", DLQSeverity: "critical"}}})
	if err := s.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	rows, at, err := s.Last()
	raw, _ := m.Check(ctx)
	want := WithExpected(raw, []string{"seen", "never"}, at)
	if err != nil || len(rows) != len(want) || len(rows) != 3 {
		t.Fatalf("Last = %d rows, %v; want the CLI's %d", len(rows), err, len(want))
	}
	never := rowOf(t, rows, "never", NeverSeenInstance)
	wantRow(t, never, StatusMissing, SeverityCritical, ConditionMissing)
	if d := s.Dropped(); d.OverLimit != 1 || d.Limit != 2 {
		t.Errorf("Dropped = %+v, want 1 over the limit of 2", d)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	fams := testenv.Scrape(t, reg)
	if n := series(t, reg, MetricWorkerStatus, "never") + series(t, reg, MetricHeartbeatTimestamp, "never"); n != 0 {
		t.Errorf("%d instance series for a worker never seen (NoActiveWorkers pages for it)", n)
	}
	if n := series(t, reg, MetricWorkerStatus, "seen"); n != 2 {
		t.Errorf("%d status series of the worker seen, want 2 (the limit)", n)
	}
	if v, ok := testenv.Gauge(fams, MetricInstancesDropped, map[string]string{"reason": "over_limit"}); !ok || v != 1 {
		t.Errorf("%s{over_limit} = %v (%v), want 1", MetricInstancesDropped, v, ok)
	}
	if v, ok := testenv.Gauge(fams, MetricInstancesLimit, nil); !ok || v != 2 {
		t.Errorf("%s = %v (%v), want 2", MetricInstancesLimit, v, ok)
	}
	if v, ok := testenv.Gauge(fams, MetricRunningInstances, map[string]string{"type": "never", "dlq_severity": "critical"}); !ok || v != 0 {
		t.Errorf("running instances of the worker never seen = %v (%v), want 0", v, ok)
	}
}
