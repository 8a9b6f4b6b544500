package heartbeat

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// newMonitor returns a monitor of cfg; unless cfg bounds it, its
// discovery makes a whole pass over the shared Redis at every check (the
// keys of tests running beside this one must not delay what it checks).
func newMonitor(t testing.TB, rdb redis.Cmdable, cfg MonitorConfig) *Monitor {
	t.Helper()
	if cfg.ScanKeysPerCheck == 0 {
		cfg.ScanKeysPerCheck = 1 << 30
	}
	m, err := NewMonitor(rdb, cfg)
	if err != nil {
		t.Fatalf("NewMonitor: %v", err)
	}
	return m
}

// checkOne runs a check that must succeed and return exactly one row.
func checkOne(t testing.TB, m *Monitor) WorkerStatus {
	t.Helper()
	rows, err := m.Check(context.Background())
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(rows) != 1 {
		t.Fatalf("Check returned %d rows, want 1: %+v", len(rows), rows)
	}
	return rows[0]
}

func wantRow(t testing.TB, got WorkerStatus, status Status, sev Severity, cond Condition) {
	t.Helper()
	if got.Status != status || got.Severity != sev || len(got.Conditions) == 0 || got.Conditions[0] != cond {
		t.Fatalf("row = %s/%s %v (%s), want %s/%s %s", got.Status, got.Severity, got.Conditions, got.Reason, status, sev, cond)
	}
}

func TestMonitorLivePublisherReadsRunningOK(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	p := newPublisher(t, rdb, PublisherConfig{Type: "payout-executor", Instance: "host-1", Prefix: prefix})
	at := time.Now().Add(-time.Second)
	p.MessageHandled(at)
	p.SetLag(3)
	if err := p.Beat(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix})
	row := checkOne(t, m)
	wantRow(t, row, StatusRunning, SeverityOK, ConditionOK)
	if row.Type != "payout-executor" || row.Instance != "host-1" || row.Lag != 3 {
		t.Errorf("row = %+v, want payout-executor/host-1 with lag 3", row)
	}
	if d := row.LastMessageAt.Sub(at); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("LastMessageAt = %s, want %s", row.LastMessageAt, at)
	}
	if time.Since(row.LastSeen) > 5*time.Second {
		t.Errorf("LastSeen = %s, want about now", row.LastSeen)
	}
}

// A publisher that stops without shutting down: its key expires and it
// reads CRITICAL missing once MissingAfter has passed, not before.
func TestMonitorStoppedWithoutShutdownReadsMissing(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	p := newPublisher(t, rdb, PublisherConfig{Type: "w", Instance: "i", Prefix: prefix, Interval: 50 * time.Millisecond, TTL: 150 * time.Millisecond})
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MissingAfter: 400 * time.Millisecond})
	// Before the beat, less the 1 ms resolution the beat is stamped in.
	start := time.Now().Add(-time.Millisecond)
	if err := p.Beat(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantRow(t, checkOne(t, m), StatusRunning, SeverityOK, ConditionOK)

	var row WorkerStatus
	testenv.Eventually(t, 5*time.Second, "the worker to read CRITICAL", func() bool {
		row = checkOne(t, m)
		return row.Severity == SeverityCritical
	})
	wantRow(t, row, StatusMissing, SeverityCritical, ConditionMissing)
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Errorf("read missing after %s, before MissingAfter 400ms", waited)
	}
	if rdb.Exists(t.Context(), p.Key()).Val() != 0 {
		t.Error("the heartbeat key still exists: missing must come from the registry")
	}
}

// A publisher stopped gracefully reads SHUTTING_DOWN (OK), then WARNING
// once ShutdownStuckAfter passed, also after its key expired; Deregister
// removes it.
func TestMonitorGracefulShutdown(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	p := newPublisher(t, rdb, PublisherConfig{Type: "w", Instance: "i", Prefix: prefix,
		Interval: 20 * time.Millisecond, TTL: time.Second, ShutdownTTL: 200 * time.Millisecond})
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MissingAfter: 100 * time.Millisecond, ShutdownStuckAfter: 500 * time.Millisecond})

	ctx, cancel := context.WithCancel(t.Context())
	beat := make(chan struct{}, 1)
	p.onBeat = func(Status, error) {
		select {
		case beat <- struct{}{}:
		default:
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	<-beat
	// The shutdown beat is stamped after cancel, in whole milliseconds:
	// measure from just before cancel, less that resolution.
	stopped := time.Now().Add(-time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantRow(t, checkOne(t, m), StatusShuttingDown, SeverityOK, ConditionShuttingDown)

	var row WorkerStatus
	testenv.Eventually(t, 5*time.Second, "the shutting-down worker to read WARNING", func() bool {
		row = checkOne(t, m)
		return row.Severity != SeverityOK
	})
	wantRow(t, row, StatusShuttingDown, SeverityWarning, ConditionShutdownStuck)
	if time.Since(stopped) < 500*time.Millisecond {
		t.Errorf("WARNING after %s, before ShutdownStuckAfter", time.Since(stopped))
	}
	if rdb.Exists(t.Context(), p.Key()).Val() != 0 {
		t.Error("key still present: the WARNING must also hold after the SHUTTING_DOWN key expired")
	}

	if err := p.Deregister(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err := m.Check(t.Context())
	if err != nil || len(rows) != 0 {
		t.Fatalf("after Deregister: %d rows (err %v), want none", len(rows), err)
	}
}

func TestMonitorStuckAndLag(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	m := newMonitor(t, rdb, MonitorConfig{
		Prefix: prefix, IdleAfter: 500 * time.Millisecond,
		LagThresholds: map[string]LagThreshold{"lagging": {Warning: 100, Critical: 500}},
	})
	tests := []struct {
		typ     string
		lag     int64
		idle    time.Duration
		sev     Severity
		conds   []Condition
		comment string
	}{
		{"stuck", 5, 2 * time.Second, SeverityWarning, []Condition{ConditionStuck}, "lag > 0 and idle for IdleAfter"},
		{"busy", 5, 0, SeverityOK, []Condition{ConditionOK}, "lag > 0 but a fresh message"},
		{"idle", 0, 2 * time.Second, SeverityOK, []Condition{ConditionOK}, "idle without lag is fine"},
		{"lagging", 150, 0, SeverityWarning, []Condition{ConditionLagWarning}, "lag above warning"},
		{"lagging", 600, 2 * time.Second, SeverityCritical, []Condition{ConditionLagCritical, ConditionStuck}, "lag above critical and stuck"},
	}
	for _, tt := range tests {
		t.Run(tt.comment, func(t *testing.T) {
			p := newPublisher(t, rdb, PublisherConfig{Type: tt.typ, Instance: "i", Prefix: prefix})
			p.SetLag(tt.lag)
			p.MessageHandled(time.Now().Add(-tt.idle))
			if err := p.Beat(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Deregister(context.Background()) })
			rows, err := m.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(rows, func(r WorkerStatus) bool { return r.Type == tt.typ })
			if i < 0 {
				t.Fatalf("no row for %s in %+v", tt.typ, rows)
			}
			r := rows[i]
			if r.Status != StatusRunning || r.Severity != tt.sev || !slices.Equal(r.Conditions, tt.conds) {
				t.Errorf("%s: %s %v (%s), want RUNNING %s %v", tt.typ, r.Severity, r.Conditions, r.Reason, tt.sev, tt.conds)
			}
		})
	}
}

// Redis unreachable reads UNKNOWN, never CRITICAL: with no worker seen yet
// one "*" row, afterwards the known workers.
func TestMonitorUnreachableReadsUnknown(t *testing.T) {
	t.Parallel()
	t.Run("closed port", func(t *testing.T) {
		m := newMonitor(t, client(t, testenv.ClosedAddr(t)), MonitorConfig{})
		rows, err := m.Check(t.Context())
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Check error = %v, want ErrUnavailable", err)
		}
		if len(rows) != 1 || rows[0].Type != "*" {
			t.Fatalf("rows = %+v, want one * row", rows)
		}
		wantRow(t, rows[0], StatusUnknown, SeverityUnknown, ConditionUnknown)
	})
	t.Run("known workers, then an outage", func(t *testing.T) {
		direct, prefix := newRedis(t)
		px := tcpproxy.New(t, testenv.Redis.URL())
		rdb := client(t, px.Addr())
		for _, inst := range []string{"a", "b"} {
			p := newPublisher(t, direct, PublisherConfig{Type: "w", Instance: inst, Prefix: prefix})
			if err := p.Beat(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MissingAfter: time.Nanosecond, ForgetAfter: time.Hour})
		if rows, err := m.Check(t.Context()); err != nil || len(rows) != 2 {
			t.Fatalf("Check through the proxy: %d rows, err %v", len(rows), err)
		}
		px.SetUp(false)
		rows, err := m.Check(t.Context())
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Check during the outage: err = %v, want ErrUnavailable", err)
		}
		if len(rows) != 2 {
			t.Fatalf("rows during the outage = %+v, want the 2 known workers", rows)
		}
		for _, r := range rows {
			wantRow(t, r, StatusUnknown, SeverityUnknown, ConditionUnknown)
		}
		if Worst(rows) != SeverityUnknown {
			t.Errorf("Worst = %s, want UNKNOWN", Worst(rows))
		}
		px.SetUp(true)
		rows, err = m.Check(t.Context())
		if err != nil || len(rows) != 2 || rows[0].Severity != SeverityCritical {
			t.Fatalf("after the outage: %+v, err %v; want the 2 workers graded again (CRITICAL with a 1ns MissingAfter)", rows, err)
		}
	})
}

// Registry entries older than ForgetAfter are not reported.
func TestMonitorForgetsOldInstances(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	old := time.Now().Add(-2 * time.Hour)
	rdb.SAdd(ctx, keys.Types(), "w")
	rdb.ZAdd(ctx, keys.Registry("w"), redis.Z{Score: unixSeconds(old), Member: "old"}, redis.Z{Score: unixSeconds(time.Now().Add(-5 * time.Minute)), Member: "recent"})
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, ForgetAfter: time.Hour})
	row := checkOne(t, m)
	if row.Instance != "recent" {
		t.Fatalf("reported %q, want only the recent instance", row.Instance)
	}
	wantRow(t, row, StatusMissing, SeverityCritical, ConditionMissing)
}

func TestMonitorMalformedHeartbeat(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	rdb.SAdd(ctx, keys.Types(), "w")
	rdb.ZAdd(ctx, keys.Registry("w"), redis.Z{Score: unixSeconds(time.Now()), Member: "i"})
	rdb.Set(ctx, keys.Heartbeat("w", "i"), "not json", time.Minute)
	row := checkOne(t, newMonitor(t, rdb, MonitorConfig{Prefix: prefix}))
	wantRow(t, row, StatusUnknown, SeverityWarning, ConditionMalformed)
}

func TestMonitorConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  MonitorConfig
		want string
	}{
		{"zero", MonitorConfig{}, ""},
		{"negative missing", MonitorConfig{MissingAfter: -1}, "missing after"},
		{"negative idle", MonitorConfig{IdleAfter: -1}, "idle after"},
		{"negative shutdown", MonitorConfig{ShutdownStuckAfter: -1}, "shutdown stuck after"},
		{"forget before missing", MonitorConfig{MissingAfter: time.Hour, ForgetAfter: time.Minute}, "must exceed missing after"},
		{"critical below warning", MonitorConfig{LagThresholds: map[string]LagThreshold{"w": {Warning: 10, Critical: 5}}}, "critical 5 is below warning 10"},
		{"negative threshold", MonitorConfig{LagThresholds: map[string]LagThreshold{"w": {Warning: -1}}}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
	d := MonitorConfig{}.WithDefaults()
	if d.MissingAfter != time.Minute || d.IdleAfter != 5*time.Minute || d.ShutdownStuckAfter != 2*time.Minute || d.ForgetAfter != 24*time.Hour {
		t.Errorf("defaults = %+v, want 60s / 5m / 2m / 24h", d)
	}
}

// cutAt takes p down when a pipeline holding cmd is about to be sent.
type cutAt struct {
	p   *tcpproxy.Proxy
	cmd string
}

func (h cutAt) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h cutAt) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h cutAt) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == h.cmd {
				h.p.SetUp(false)
			}
		}
		return next(ctx, cmds)
	}
}

// TestMonitorOutageMidCheck: Redis lost between the registry reads and
// the reads of the keys and shutdown marks (a real outage, at that point
// of the check) is an UNKNOWN check, never a crash of the sampler.
func TestMonitorOutageMidCheck(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"hmget", "getrange", "zrevrangebyscore"} {
		t.Run(cmd, func(t *testing.T) {
			direct, prefix := newRedis(t)
			for _, inst := range []string{"a", "b"} {
				if err := newPublisher(t, direct, PublisherConfig{Type: "w", Instance: inst, Prefix: prefix}).Beat(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			px := tcpproxy.New(t, testenv.Redis.URL())
			rdb := client(t, px.Addr())
			rdb.AddHook(cutAt{px, cmd})
			rows, err := newMonitor(t, rdb, MonitorConfig{Prefix: prefix}).Check(t.Context())
			if !errors.Is(err, ErrUnavailable) || len(rows) != 1 || rows[0].Severity != SeverityUnknown {
				t.Fatalf("Check cut at %s: %+v, %v; want one UNKNOWN row and ErrUnavailable", cmd, rows, err)
			}
		})
	}
}
