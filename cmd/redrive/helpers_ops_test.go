package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// daemon is `redrive <args>` running in the background.
type daemonRun struct {
	stdout, stderr *testenv.Buffer
	cancel         context.CancelFunc
	done           chan int
}

// startDaemon runs redrive in the background until stop (or the end of
// the test).
func startDaemon(t *testing.T, args ...string) *daemonRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemonRun{stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() { d.done <- run(ctx, args, d.stdout, d.stderr) }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop ends the daemon like SIGTERM does and returns its exit status.
func (d *daemonRun) stop(t *testing.T) int {
	t.Helper()
	d.cancel()
	select {
	case code := <-d.done:
		d.done <- code // a second stop returns it again
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("the daemon did not stop within 60s after its context ended; stderr:\n%s", d.stderr)
		return -1
	}
}

// exited reports the daemon's exit status when it ended on its own.
func (d *daemonRun) exited() (int, bool) {
	select {
	case code := <-d.done:
		d.done <- code
		return code, true
	default:
		return 0, false
	}
}

// eventually polls cond until it holds; the test fails after 60 s with
// what describe says.
func eventually(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	eventuallyWithin(t, 60*time.Second, what, cond, describe)
}

// eventuallyWithin is eventually with another bound.
func eventuallyWithin(t *testing.T, within time.Duration, what string, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v\n%s", what, within, describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// httpGet fetches url; a transport error is status 0.
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// healthReport is the part of /healthz the tests read.
type healthReport struct {
	Status     string   `json:"status"`
	Reasons    []string `json:"reasons"`
	Components struct {
		Broker struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"broker"`
		DLQ map[string]int64 `json:"dlq"`
	} `json:"components"`
}

func healthz(t *testing.T, base string) (int, healthReport) {
	t.Helper()
	code, body := httpGet(base + "/healthz")
	var h healthReport
	if code != 0 {
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatalf("/healthz: %v\n%s", err, body)
		}
	}
	return code, h
}

// metricValue scrapes base/metrics and returns the value of the series of
// name whose labels include labels.
func metricValue(t *testing.T, base, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	code, body := httpGet(base + "/metrics")
	if code != http.StatusOK {
		return 0, false
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return testenv.Value(fams, name, labels)
}

// newSchema creates a PostgreSQL schema of its own, dropped when the test
// ends, and returns the database URL selecting it (search_path).
func newSchema(t *testing.T, schema string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() { testenv.DropSchema(t, schema) })
	sep := "?"
	if strings.Contains(testenv.PostgreSQL.URL(), "?") {
		sep = "&"
	}
	return testenv.PostgreSQL.URL() + sep + "search_path=" + schema
}

// newRedisClient connects to the test Redis.
func newRedisClient(t *testing.T) *redis.Client {
	return testenv.RedisClient(t)
}

// fields returns the whitespace-separated fields of the first line of out
// that starts with prefix.
func fields(out, prefix string) []string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.Fields(line)
		}
	}
	return nil
}
