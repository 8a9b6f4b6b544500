package heartbeat

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// pythonPublisher is docs/examples/heartbeat_publisher.py, running.
type pythonPublisher struct{ cmd *exec.Cmd }

// startPython runs the reference Python publisher of the protocol page
// for type and instance under prefix, beating every 200 ms with a 1 s
// TTL (1 s once SHUTTING_DOWN); it is killed when the test ends.
func startPython(t *testing.T, prefix, typ, instance string) *pythonPublisher {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH (Debian's python3; .ci/run installs it): %v", err)
	}
	cmd := exec.Command(py, filepath.Join("..", "docs", "examples", "heartbeat_publisher.py"))
	cmd.Env = append(os.Environ(), "REDIS_ADDR="+testenv.Redis.URL(), "REDIS_PREFIX="+prefix, "WORKER_TYPE="+typ,
		"WORKER_INSTANCE="+instance, "HEARTBEAT_INTERVAL=0.2", "HEARTBEAT_TTL=1", "HEARTBEAT_SHUTDOWN_TTL=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the python publisher: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "beating "+prefix+"worker:"+typ+":"+instance) {
		t.Fatalf("the python publisher said %q, %v", line, err)
	}
	return &pythonPublisher{cmd}
}

// waitRow checks until typ/instance reads cond, failing after 10 s.
func waitRow(t *testing.T, m *Monitor, typ, instance string, cond Condition) WorkerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := m.Check(context.Background())
		for _, r := range rows {
			if r.Type == typ && r.Instance == instance && err == nil && r.Conditions[0] == cond {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s never read %s: %+v, %v", typ, instance, cond, rows, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPythonReferencePublisher: the protocol page's Python publisher,
// writing only its key, is seen, graded and exported by the real monitor;
// killed, it reads MISSING; stopped with SIGTERM, it says SHUTTING_DOWN
// and is forgotten once its key expired.
func TestPythonReferencePublisher(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	keys := Keys{Prefix: prefix}
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MissingAfter: 1500 * time.Millisecond, Workers: []string{"py-worker"}})
	stopped := startPython(t, prefix, "py-worker", "py-1")
	killed := startPython(t, prefix, "py-worker", "py-2")

	waitRow(t, m, "py-worker", "py-1", ConditionOK)
	r := waitRow(t, m, "py-worker", "py-2", ConditionOK)
	if r.Status != StatusRunning || time.Since(r.LastSeen) > 2*time.Second {
		t.Errorf("python row = %+v", r)
	}
	s, err := NewSampler(m, SamplerConfig{Workers: []Worker{{Type: "py-worker", DLQSeverity: "critical"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sample(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	if got := series(t, reg, MetricHeartbeatTimestamp, "py-worker"); got != 2 {
		t.Errorf("%d %s series of py-worker, want 2", got, MetricHeartbeatTimestamp)
	}
	if got := series(t, reg, MetricRunningInstances, "py-worker"); got != 1 {
		t.Errorf("no %s of py-worker", MetricRunningInstances)
	}
	if n, _ := rdb.Exists(t.Context(), keys.Registry("py-worker")).Result(); n != 0 {
		t.Error("the python publisher wrote a registry: the test proves nothing")
	}

	_ = killed.cmd.Process.Kill()
	waitRow(t, m, "py-worker", "py-2", ConditionMissing)

	_ = stopped.cmd.Process.Signal(syscall.SIGTERM)
	waitRow(t, m, "py-worker", "py-1", ConditionShuttingDown)
	if err := stopped.cmd.Wait(); err != nil {
		t.Errorf("the python publisher exited with %v after SIGTERM", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := m.Check(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0].Instance == "py-2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after its SHUTTING_DOWN key expired, py-1 is still reported: %+v", rows)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// series counts the series of metric whose type label is typ.
func series(t *testing.T, g prometheus.Gatherer, metric, typ string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "type" && l.GetValue() == typ {
					n++
				}
			}
		}
	}
	return n
}
