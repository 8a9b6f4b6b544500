package exporter_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newRedis connects to the test Redis and deletes the keys under prefix
// when the test ends.
func newRedis(t *testing.T, prefix string) *redis.Client {
	c := testenv.RedisClient(t)
	t.Cleanup(func() { testenv.DeleteKeys(t, c, prefix) })
	return c
}

// newStore opens a pgstore in a schema of its own, dropped when the test
// ends.
func newStore(t *testing.T) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(t.Context(), testenv.PostgreSQL.URL(), pgstore.Config{Schema: testenv.Schema(t), MaxConns: 4, Logger: quiet()})
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// health fetches /healthz.
func health(t *testing.T, base string) (int, exporter.Health) {
	t.Helper()
	code, body := get(t, base+"/healthz")
	var h exporter.Health
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/healthz is not a health report: %v\n%s", err, body)
	}
	return code, h
}

// scrape fetches /metrics and parses it.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// wantValue fails unless the series exists with value want.
func wantValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := testenv.Value(fams, name, labels)
	if !ok {
		t.Errorf("no series %s%v", name, labels)
		return
	}
	if got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func hasReason(h exporter.Health, sub string) bool {
	for _, r := range h.Reasons {
		if strings.Contains(r, sub) {
			return true
		}
	}
	return false
}

// listen binds a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// waitFor polls cond until it holds; the test fails after 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
