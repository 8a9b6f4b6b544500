package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// serveEnv is a deployment for `redrive serve`: a configuration with a
// RabbitMQ prefix and topic of its own, a PostgreSQL schema of its own,
// free ports, and the topology removed when the test ends.
type serveEnv struct {
	path, topic, queue, dlqName, token, worker string
	admin, metrics                             string // base URLs
	prefix                                     string
}

func newServeEnv(t *testing.T) *serveEnv {
	t.Helper()
	id := strings.ToLower(broker.NewMessageID()[:8])
	e := &serveEnv{topic: "srv." + id, prefix: "srv-" + id, token: "t0ken-" + id}
	e.worker = "billing-" + id
	e.queue = rabbit.Queue(e.topic, e.worker)
	e.dlqName = rabbit.DLQ(e.queue)
	adminAddr, metricsAddr := testenv.ClosedAddr(t), testenv.ClosedAddr(t)
	e.admin, e.metrics = "http://"+adminAddr, "http://"+metricsAddr
	pg := newSchema(t, "serve_test_"+id)
	e.path = writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: %s, delay: {resolution: 100ms, factor: 2, levels: 2}}
redis: {addr: %q}
postgres: {url: %q}
workers:
  - {name: %s, topic: %s, retry: {max_retries: 0, backoff: 100ms}, dlq: {severity: critical}}
lag: {thresholds: {%s: {warning: 5, critical: 10}}}
admin: {listen: %q, token: %q}
exporter: {listen: %q}
`, testenv.RabbitMQ.URL(), e.prefix, testenv.Redis.URL(), pg, e.worker, e.topic, e.topic, adminAddr, e.token, metricsAddr))
	teardownAfter(t, e.path)
	return e
}

// dlq runs a dlq command against the env's admin API.
func (e *serveEnv) dlq(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cli(t, append(append([]string{"dlq"}, args...), "--config", e.path, "--actor", "alice")...)
}

// pending waits until `dlq ls` shows n pending entries in the env's DLQ.
func (e *serveEnv) pending(t *testing.T, n int) {
	t.Helper()
	var out, errOut string
	eventually(t, fmt.Sprintf("dlq ls shows %d pending in %s", n, e.dlqName), func() bool {
		var code int
		code, out, errOut = e.dlq(t, "ls")
		f := fields(out, e.dlqName+" ")
		return code == exitOK && len(f) > 2 && f[2] == fmt.Sprint(n)
	}, func() string { return out + errOut })
}

// entryIDs lists the ids of the entries `dlq ls DLQ` shows with status.
func (e *serveEnv) entryIDs(t *testing.T, status string) []string {
	t.Helper()
	code, out, errOut := e.dlq(t, "ls", e.dlqName, "--status", status)
	if code != exitOK || !strings.HasPrefix(out, "ID ") {
		t.Fatalf("dlq ls %s: %d\n%s%s", e.dlqName, code, out, errOut)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == status {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// deadLetter publishes a message straight to the DLQ queue, with the
// headers redrive's consumer writes when it gives up.
func (e *serveEnv) deadLetter(t *testing.T, ch *amqp.Channel, body, errMsg string) {
	t.Helper()
	now := wire.FormatTime(time.Now())
	err := ch.PublishWithContext(t.Context(), "", e.dlqName, false, false, amqp.Publishing{
		MessageId: broker.NewMessageID(), Body: []byte(body), DeliveryMode: amqp.Persistent,
		Headers: amqp.Table{
			broker.HeaderReason: "max_retries", broker.HeaderError: errMsg, broker.HeaderErrorClass: "db.Timeout",
			broker.HeaderWorker: e.worker, broker.HeaderSource: e.queue, driver.HeaderTopic: e.topic,
			broker.HeaderAttempt: "4", broker.HeaderFirstFailureAt: now, broker.HeaderLastFailureAt: now,
		},
	})
	if err != nil {
		t.Fatalf("publish to %s: %v", e.dlqName, err)
	}
}

// The DLQ operations of a running `redrive serve` on RabbitMQ and
// PostgreSQL, through the CLI: a handler's permanent failure is kept and
// counted; show, replay (the message is back on the group queue), replay
// of a replayed entry (exit 2), discard without a reason (exit 2) and with
// one, replay-all with its progress; /metrics and /healthz meanwhile;
// `workers` and `lag` print their tables; SIGTERM stops it with status 0.
func TestServeDLQOperations(t *testing.T) {
	e := newServeEnv(t)
	d := startDaemon(t, "serve", "--config", e.path, "--sample-interval", "100ms")
	eventually(t, "serve is ready", func() bool {
		if _, done := d.exited(); done {
			t.Fatalf("serve exited early:\n%s", d.stderr)
		}
		code, _ := httpGet(e.metrics + "/readyz")
		acode, _, _ := e.dlq(t, "ls")
		return code == http.StatusOK && acode == exitOK
	}, d.stderr.String)

	// A worker whose handler fails permanently dead-letters a message.
	c, err := config.Load(e.path)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rabbit.New(t.Context(), rc)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer b.Close()
	cctx, stopConsumer := context.WithCancel(t.Context())
	consumed := make(chan error, 1)
	go func() {
		consumed <- b.Consume(cctx, c.Workers[0].Subscription(), func(context.Context, *broker.Delivery) error {
			return broker.Permanent(errors.New("amount is negative"))
		})
	}()
	if code, out, errOut := cli(t, "publish", "--config", e.path, "--topic", e.topic, "--key", "deal-42", "--header", "trace=abc", "--data", `{"amount":-5}`); code != exitOK {
		t.Fatalf("publish: %d %s%s", code, out, errOut)
	}
	e.pending(t, 1)
	stopConsumer() // replays must stay on the group queue for the test to read
	if err := <-consumed; err != nil {
		t.Fatalf("consume: %v", err)
	}
	ids := e.entryIDs(t, "pending")
	if len(ids) != 1 {
		t.Fatalf("pending entries = %v, want one", ids)
	}
	id := ids[0]

	if v, ok := metricValue(t, e.metrics, "worker_dlq_messages_total", map[string]string{"dlq": e.dlqName, "severity": "critical"}); !ok || v != 1 {
		t.Errorf("worker_dlq_messages_total{dlq=%q,severity=critical} = %v (present %v), want 1", e.dlqName, v, ok)
	}
	var h healthReport
	eventually(t, "/healthz reads DEGRADED with 1 pending", func() bool {
		_, h = healthz(t, e.metrics)
		return h.Status == "DEGRADED" && h.Components.DLQ[e.dlqName] == 1
	}, func() string { return fmt.Sprintf("%+v", h) })

	code, out, errOut := e.dlq(t, "show", e.dlqName, id)
	for _, want := range []string{"status:", "pending", `"amount": -5`, "amount is negative", "permanent", `"deal-42"`, `trace (string): "abc"`, "replays to:    queue " + e.queue, "audit:", "(none)"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("dlq show: %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}

	// One name for where a replay goes: the API, the CLI and the audit row
	// say the same, the worker's queue and the worker.
	dest := "queue " + e.queue + " (worker " + e.worker + ")"
	var entry struct {
		ReplayDestination string `json:"replay_destination"`
	}
	req, _ := http.NewRequest(http.MethodGet, e.admin+"/internal/v1/dlq/"+e.dlqName+"/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&entry)
		resp.Body.Close()
		if err != nil || entry.ReplayDestination != dest {
			t.Errorf("API replay_destination = %q (%v), want %q", entry.ReplayDestination, err, dest)
		}
	}
	if _, out, _ := e.dlq(t, "show", e.dlqName, id); !regexp.MustCompile(`replays to: +` + regexp.QuoteMeta(dest)).MatchString(out) {
		t.Errorf("dlq show does not say where a replay goes (%q):\n%s", dest, out)
	}

	// Replay: back on the group queue, byte for byte, marked.
	if code, out, errOut := e.dlq(t, "replay", e.dlqName, id); code != exitOK || out != "replayed "+e.dlqName+"/"+id+" to "+dest+" (status replayed)\n" {
		t.Fatalf("dlq replay: %d %q %s; want it to name %q", code, out, errOut, dest)
	}
	ch := testenv.AMQP(t)
	m, ok, err := ch.Get(e.queue, true)
	if err != nil || !ok {
		t.Fatalf("the replayed message is not on %s: %v %v", e.queue, ok, err)
	}
	if string(m.Body) != `{"amount":-5}` || m.Headers[broker.HeaderReplayedFrom] != e.dlqName+"/"+id || m.Headers["trace"] != "abc" {
		t.Errorf("replayed message = %q headers %v", m.Body, m.Headers)
	}
	if _, out, _ := e.dlq(t, "show", e.dlqName, id); !strings.Contains(out, "replayed") || !strings.Contains(out, "alice") || !strings.Contains(out, "to "+dest) {
		t.Errorf("dlq show after replay lacks the audit row by alice naming %q:\n%s", dest, out)
	}
	code, _, errOut = e.dlq(t, "replay", e.dlqName, id)
	if code != exitUsage || !strings.Contains(errOut, "HTTP 409") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("replaying a replayed entry: %d %q, want exit 2 and one line with HTTP 409", code, errOut)
	}

	// Discard needs a reason.
	e.deadLetter(t, ch, "second", "connection reset")
	e.pending(t, 1)
	id2 := e.entryIDs(t, "pending")[0]
	code, _, errOut = e.dlq(t, "discard", e.dlqName, id2)
	if code != exitUsage || !strings.Contains(errOut, "--reason is required") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("discard without a reason: %d %q, want exit 2, one line", code, errOut)
	}
	if code, out, errOut := e.dlq(t, "discard", e.dlqName, id2, "--reason", "duplicate of deal 42"); code != exitOK || !strings.Contains(out, "discarded") {
		t.Fatalf("discard: %d %s%s", code, out, errOut)
	}
	if _, out, _ := e.dlq(t, "show", e.dlqName, id2); !strings.Contains(out, "discarded") || !strings.Contains(out, "duplicate of deal 42") {
		t.Errorf("dlq show after discard:\n%s", out)
	}

	// Replay-all of three, with progress on stderr.
	for i := range 3 {
		e.deadLetter(t, ch, fmt.Sprintf("bulk-%d", i), "db timeout")
	}
	e.pending(t, 3)
	code, out, errOut = e.dlq(t, "replay-all", e.dlqName, "--rate", "0", "--poll", "50ms")
	if code != exitOK || !strings.Contains(out, "3 replayed, 0 skipped, 0 failed, 0 mismatched of 3") || !strings.Contains(errOut, "3/3 100%") {
		t.Fatalf("replay-all: %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for i := range 3 {
		m, ok, err := ch.Get(e.queue, true)
		if err != nil || !ok || !strings.HasPrefix(string(m.Body), "bulk-") {
			t.Fatalf("replayed message %d: %q %v %v", i, m.Body, ok, err)
		}
	}
	e.pending(t, 0)

	// The tables of workers and lag. The configured worker, never seen,
	// is MISSING (exit 4); once it beats, RUNNING (exit 0).
	code, out, errOut = cli(t, "workers", "--config", e.path)
	if f := fields(out, e.worker+" "); code != exitCritical || len(f) < 4 || f[1] != "-" || f[2] != "MISSING" || f[3] != "CRITICAL" ||
		!strings.Contains(errOut, "worst severity of the configured workers: CRITICAL (exit 4)") {
		t.Errorf("workers before a heartbeat: %d, row %v\n%s%s", code, f, out, errOut)
	}
	rdb := newRedisClient(t)
	pub, err := heartbeat.NewPublisher(rdb, heartbeat.PublisherConfig{Type: e.worker, Instance: "test-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pub.Deregister(context.Background())
		rdb.SRem(context.Background(), "workers", e.worker)
	})
	if err := pub.Beat(t.Context()); err != nil {
		t.Fatalf("beat: %v", err)
	}
	code, out, errOut = cli(t, "workers", "--config", e.path)
	if f := fields(out, e.worker+" "); code != exitOK || len(f) < 4 || f[1] != "test-1" || f[2] != "RUNNING" || f[3] != "OK" || errOut != "" {
		t.Errorf("workers: %d, row %v\n%s%s", code, f, out, errOut)
	}
	code, out, errOut = cli(t, "lag", "--config", e.path)
	if f := fields(out, e.queue+" "); code != exitOK || len(f) != 4 || f[1] != "ok" || f[2] != "0" {
		t.Errorf("lag: %d, row %v\n%s%s", code, f, out, errOut)
	}
	if f := fields(out, e.dlqName+" "); len(f) != 4 || f[1] != "ok" {
		t.Errorf("lag: DLQ row %v\n%s", f, out)
	}

	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d after SIGTERM; stderr:\n%s", code, d.stderr)
	}
}

// With the broker on a closed port serve does not exit: it retries,
// logging the URL with its password masked, while the exporter serves
// DOWN; it stops cleanly when told to.
func TestServeUnreachableBroker(t *testing.T) {
	metrics := testenv.ClosedAddr(t)
	path := writeConfig(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "amqp://guest:s3cret@%s/", prefix: srv-down}
redis: {addr: %q}
workers: [{name: billing, topic: orders}]
admin: {listen: %q}
exporter: {listen: %q}
`, testenv.ClosedAddr(t), testenv.Redis.URL(), testenv.ClosedAddr(t), metrics))
	d := startDaemon(t, "serve", "--config", path, "--insecure-no-auth")
	eventually(t, "serve logs the unreachable broker", func() bool {
		return strings.Contains(d.stderr.String(), "broker rabbitmq unreachable; retrying")
	}, d.stderr.String)
	var code int
	var h healthReport
	eventually(t, "/healthz reads DOWN", func() bool {
		code, h = healthz(t, "http://"+metrics)
		return code == http.StatusServiceUnavailable && h.Status == "DOWN"
	}, func() string { return fmt.Sprintf("%d %+v\n%s", code, h, d.stderr) })
	logs := d.stderr.String()
	if strings.Contains(logs+h.Components.Broker.Error, "s3cret") || !strings.Contains(logs, "guest:") {
		t.Errorf("logs and health must name the URL with its password masked:\n%s\n%s", logs, h.Components.Broker.Error)
	}
	if !strings.Contains(logs, "held in memory only") {
		t.Errorf("no warning that entries are held in memory:\n%s", logs)
	}
	if _, done := d.exited(); done {
		t.Fatalf("serve exited instead of retrying:\n%s", logs)
	}
	if code := d.stop(t); code != exitOK {
		t.Errorf("serve exited %d; stderr:\n%s", code, d.stderr)
	}
}

func TestServeBadInput(t *testing.T) {
	clearEnv(t)
	cfg := func(admin string) string {
		return writeConfig(t, fmt.Sprintf("broker: rabbitmq\nworkers: [{name: billing, topic: orders}]\nadmin: {listen: %q}\n", admin))
	}
	local := cfg("127.0.0.1:18080")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--config", local}, "no admin token: set admin.operators"},
		{[]string{"--config", local, "--insecure-no-auth", "--listen", "0.0.0.0:18080"}, "--insecure-no-auth is only allowed on a loopback address"},
		{[]string{"--config", local, "--insecure-no-auth", "--metrics-listen", "127.0.0.1:18080"}, "both listen on 127.0.0.1:18080"},
		{[]string{"--config", local, "--insecure-no-auth", "--listen", "nowhere"}, `--listen "nowhere" is not host:port`},
		{[]string{"--config", local, "--sample-interval", "soon"}, `"soon" is not a duration`},
		{[]string{"--config", writeConfig(t, "broker: rabbitmq\n"), "--insecure-no-auth"}, "no workers configured"},
	}
	for _, tt := range tests {
		code, out, errOut := cli(t, append([]string{"serve"}, tt.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("serve %v = %d %q %q, want exit 2 and one line containing %q", tt.args, code, out, errOut, tt.want)
		}
	}
	// $REDRIVE_ADMIN_TOKEN is checked as admin.token is (issue 40: " tok "
	// started a serve nobody could log into: presented tokens are trimmed).
	for tok, want := range map[string]string{
		"short":              "$REDRIVE_ADMIN_TOKEN: shorter than 8 characters",
		" operator-token-1 ": "$REDRIVE_ADMIN_TOKEN: has white space at its start or end",
		"operator-token-1\n": "$REDRIVE_ADMIN_TOKEN: has white space at its start or end",
		"\toperator-token-1": "$REDRIVE_ADMIN_TOKEN: has white space at its start or end",
		"        ":           "$REDRIVE_ADMIN_TOKEN: blank",
	} {
		t.Setenv("REDRIVE_ADMIN_TOKEN", tok)
		if code, out, errOut := cli(t, "serve", "--config", local); code != exitUsage || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("serve with $REDRIVE_ADMIN_TOKEN=%q = %d %q %q, want exit 2 and one line with %q", tok, code, out, errOut, want)
		}
		if code, _, errOut := cli(t, "dev", "--no-samples", "--listen", "127.0.0.1:1"); code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("dev with $REDRIVE_ADMIN_TOKEN=%q = %d %q, want exit 2 with %q", tok, code, errOut, want)
		}
	}
	if code, _, errOut := cli(t, "dev", "--token", " operator-token-1"); code != exitUsage || !strings.Contains(errOut, "--token: has white space") {
		t.Errorf("dev --token with a space = %d %q", code, errOut)
	}
}

// Without admin.token, serve takes $REDRIVE_ADMIN_TOKEN, as the dlq
// commands do; the configuration's own token wins.
func TestServeTokenFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("REDRIVE_ADMIN_TOKEN", "env-token-1")
	c := &config.Config{}
	if err := tokenFromEnv(c); err != nil || c.Admin.Token != "env-token-1" {
		t.Errorf("no admin.token: %q, %v; want the environment's", c.Admin.Token, err)
	}
	c = &config.Config{Admin: config.Admin{Token: "cfg-token-1"}}
	if err := tokenFromEnv(c); err != nil || c.Admin.Token != "cfg-token-1" {
		t.Errorf("admin.token set: %q, %v; want the configuration's", c.Admin.Token, err)
	}
	c = &config.Config{Admin: config.Admin{ViewerToken: "env-token-1"}}
	if err := tokenFromEnv(c); err == nil {
		t.Error("the viewer token as the operator's accepted")
	}
}
