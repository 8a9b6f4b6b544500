package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Heartbeat thresholds of the live test (heartbeat: section of every
// configuration it writes).
const (
	liveBeat         = 300 * time.Millisecond
	liveMissingAfter = 3 * time.Second
)

// liveDeployment is the redrive deployment of TestAlertsLive: four workers
// on RabbitMQ under a prefix of their own, a configuration for `redrive
// serve` (every worker) and one per worker process.
type liveDeployment struct {
	id, dir                   string
	pay, mail, stall, fleet   string // worker names
	host, py                  string // a hostname-pid worker; a foreign (Python) one
	serveConfig               string
	payMail, stallCfg, fleetC string // worker process configurations
	hostCfg                   string
	admin, metrics            string // addresses of serve
}

func newLiveDeployment(t *testing.T) *liveDeployment {
	t.Helper()
	id := strings.ToLower(broker.NewMessageID()[:8])
	d := &liveDeployment{id: id, dir: t.TempDir(), pay: "pay-" + id, mail: "mail-" + id, stall: "stall-" + id, fleet: "fleet-" + id,
		host: "host-" + id, py: "py-" + id, admin: testenv.ClosedAddr(t), metrics: testenv.ClosedAddr(t)}
	head := fmt.Sprintf(`broker: rabbitmq
rabbitmq: {url: %q, prefix: live-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
redis: {addr: %q}
heartbeat: {interval: %s, ttl: 1s, missing_after: %s, idle_after: 3s, shutdown_stuck_after: 3s, instance: "${%s}"}
admin: {listen: %q}
exporter: {listen: %q}
workers:
`, testenv.RabbitMQ.URL(), id, testenv.Redis.URL(), config.Duration(liveBeat), config.Duration(liveMissingAfter), envLivePod, d.admin, d.metrics)
	w := map[string]string{
		d.pay:   fmt.Sprintf("  - {name: %s, topic: live.pay.%s, retry: {max_retries: 0, backoff: 100ms}, dlq: {severity: critical}}\n", d.pay, id),
		d.mail:  fmt.Sprintf("  - {name: %s, topic: live.mail.%s, retry: {max_retries: 0, backoff: 100ms}, dlq: {severity: warning}}\n", d.mail, id),
		d.stall: fmt.Sprintf("  - {name: %s, topic: live.stall.%s, concurrency: 1, prefetch: 1, retry: {backoff: 100ms}}\n", d.stall, id),
		d.fleet: fmt.Sprintf("  - {name: %s, topic: live.fleet.%s, concurrency: 1, prefetch: 1, retry: {backoff: 100ms}, dlq: {severity: critical}}\n", d.fleet, id),
		d.host:  fmt.Sprintf("  - {name: %s, topic: live.host.%s, retry: {backoff: 100ms}}\n", d.host, id),
	}
	write := func(name string, workers ...string) string {
		doc := head
		for _, n := range workers {
			doc += w[n]
		}
		p := filepath.Join(d.dir, name+".yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	d.serveConfig = write("serve", d.pay, d.mail, d.stall, d.fleet, d.host)
	d.payMail = write("paymail", d.pay, d.mail)
	d.stallCfg = write("stall", d.stall)
	d.fleetC = write("fleet", d.fleet)
	d.hostCfg = write("host", d.host)
	t.Cleanup(func() { d.cleanup(t) })
	return d
}

// cleanup removes the deployment's RabbitMQ topology and Redis keys.
func (d *liveDeployment) cleanup(t *testing.T) {
	c, err := config.Load(d.serveConfig)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	if cfg, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler)); err == nil {
		if plan, err := rabbit.Plan(cfg, c.Subscriptions()...); err == nil {
			deletePlan(plan)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	defer rdb.Close()
	ctx := context.Background()
	for _, typ := range []string{d.pay, d.mail, d.stall, d.fleet, d.host, d.py} {
		keys, _ := rdb.Keys(ctx, "worker:"+typ+":*").Result()
		rdb.Del(ctx, append(keys, "workers:"+typ, "workers:"+typ+":stopping", "workers:"+typ+":discovered")...)
		rdb.SRem(ctx, "workers", typ)
	}
}

func deletePlan(plan []rabbit.Declaration) {
	testenv.DeleteTopology(plan, func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
}

// publish sends bodies to topic, in order, with redrive's publisher.
func (d *liveDeployment) publish(t *testing.T, topic string, bodies ...string) {
	t.Helper()
	c, err := config.Load(d.serveConfig)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openBroker(t.Context(), c)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer b.Close()
	msgs := make([]broker.Message, len(bodies))
	for i, body := range bodies {
		msgs[i] = broker.Message{Value: []byte(body)}
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatalf("publish to %s: %v", topic, err)
	}
}

// TestAlertsLive runs configs/prometheus/alerts.yml (only `for:`
// shortened) in a real Prometheus that scrapes a fresh `redrive serve`
// with the documented scrape config, while real worker processes fail,
// stall, die and come back:
//
//   - the first dead letter of a fresh serve fires DLQFinancial (critical
//     DLQ) and DLQNonFinancial (warning DLQ); its entry names the worker
//     and the worker instance;
//   - a stalled worker with lag fires WorkerStuckProcessing (also shown by
//     `redrive workers` and the console), which resolves once it recovers;
//   - of two instances with configured identities, one killed and one
//     killed while draining, only the killed one fires
//     WorkerHeartbeatMissing, no sooner than heartbeat.missing_after; the
//     other fires WorkerShutdownStuck; with none left NoActiveWorkers
//     fires; a restart under the same identity resolves both, and retiring
//     the drained one resolves its alert;
//   - a foreign worker (the Python publisher of docs/examples, writing only
//     its heartbeat key) killed fires WorkerHeartbeatMissing, which
//     resolves when it is back;
//   - a hostname-pid worker killed fires WorkerHeartbeatMissing, which
//     resolves when its successor on the same host retires it.
func TestAlertsLive(t *testing.T) {
	start := time.Now()
	d := newLiveDeployment(t)
	// The topology exists before anything publishes.
	if code, out, errOut := cli(t, "topology", "apply", "--config", d.serveConfig); code != exitOK {
		t.Fatalf("topology apply: %d %s%s", code, out, errOut)
	}
	startDaemon(t, "serve", "--config", d.serveConfig, "--insecure-no-auth", "--sample-interval", "500ms")
	prom := startPrometheus(t, d.metrics)

	startLiveWorker(t, d.payMail, "p-"+d.id, d.dir)
	startLiveWorker(t, d.stallCfg, "s-"+d.id, d.dir)
	a := startLiveWorker(t, d.fleetC, "a-"+d.id, d.dir)
	b := startLiveWorker(t, d.fleetC, "b-"+d.id, d.dir)

	// Every kept DLQ's counter is scraped at 0 before its first dead letter.
	payDLQ, mailDLQ := rabbit.DLQ(rabbit.Queue("live.pay."+d.id, d.pay)), rabbit.DLQ(rabbit.Queue("live.mail."+d.id, d.mail))
	poll(t, "the DLQ counters scraped at 0", func() bool {
		n := 0
		for _, s := range prom.query(t, fmt.Sprintf(`worker_dlq_messages_total{dlq=~%q}`, payDLQ+"|"+mailDLQ)) {
			if s.Value == "0" {
				n++
			}
		}
		return n == 2
	}, func() string { return "" })

	// The stalled worker: one message blocks its only handler, three wait.
	d.publish(t, "live.stall."+d.id, "stall", "a", "b", "c")
	d.publish(t, "live.pay."+d.id, "poison")
	d.publish(t, "live.mail."+d.id, "poison")

	prom.waitAlert(t, "DLQFinancial", map[string]string{"dlq": payDLQ, "severity": "critical"})
	prom.waitAlert(t, "DLQNonFinancial", map[string]string{"dlq": mailDLQ})
	if got := prom.query(t, fmt.Sprintf(`increase(worker_dlq_messages_total{dlq=%q}[5m]) > 0`, payDLQ)); len(got) != 1 {
		t.Errorf("increase of the critical DLQ's counter over its first dead letter = %v, want one series above 0", got)
	}
	checkDeadLetterOrigin(t, d, payDLQ, d.pay, "p-"+d.id)

	stuck := map[string]string{"type": d.stall, "worker_instance": "s-" + d.id}
	prom.waitAlert(t, "WorkerStuckProcessing", stuck)
	checkStuckShown(t, d, "s-"+d.id)
	if err := os.WriteFile(filepath.Join(d.dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	prom.waitResolved(t, "WorkerStuckProcessing", stuck)

	// The fleet: a is killed; b takes a message it never finishes, is
	// told to stop (it drains, SHUTTING_DOWN) and is killed while draining.
	running := fmt.Sprintf(`redrive_worker_running_instances{type=%q}`, d.fleet)
	poll(t, "two fleet instances running", func() bool {
		s := prom.query(t, running)
		return len(s) == 1 && s[0].Value == "2"
	}, func() string { return fmt.Sprint(prom.query(t, running)) })
	a.kill(t)
	killedA := time.Now()
	d.publish(t, "live.fleet."+d.id, "hold")
	poll(t, "b holding a message", func() bool {
		_, err := os.Stat(filepath.Join(d.dir, "holding-b-"+d.id))
		return err == nil
	}, b.log.String)
	b.term(t)
	rdb := newRedisClient(t)
	poll(t, "b SHUTTING_DOWN", func() bool {
		raw, _ := rdb.Get(t.Context(), "worker:"+d.fleet+":b-"+d.id).Result()
		return strings.Contains(raw, `"SHUTTING_DOWN"`)
	}, b.log.String)
	b.kill(t)

	missA := map[string]string{"type": d.fleet, "worker_instance": "a-" + d.id}
	missing := prom.waitAlert(t, "WorkerHeartbeatMissing", missA)
	if since := missing.ActiveAt.Sub(killedA); since < liveMissingAfter-liveBeat || since > liveMissingAfter+10*time.Second {
		t.Errorf("WorkerHeartbeatMissing active %s after the kill, want heartbeat.missing_after (%s) plus sampling and scraping", since, liveMissingAfter)
	}
	prom.waitAlert(t, "WorkerShutdownStuck", map[string]string{"type": d.fleet, "worker_instance": "b-" + d.id})
	if got := find(prom.alerts(t), "WorkerHeartbeatMissing", "", map[string]string{"worker_instance": "b-" + d.id}); len(got) != 0 {
		t.Errorf("the instance killed while draining reads missing: %v", got)
	}
	noWorkers := map[string]string{"type": d.fleet, "severity": "critical"}
	prom.waitAlert(t, "NoActiveWorkers", noWorkers)

	// a comes back under the same identity: its alert resolves, and the
	// fleet runs again.
	startLiveWorker(t, d.fleetC, "a-"+d.id, d.dir)
	prom.waitResolved(t, "WorkerHeartbeatMissing", missA)
	prom.waitResolved(t, "NoActiveWorkers", noWorkers)

	// b is gone for good: the operator retires it.
	code, out, errOut := cli(t, "workers", "retire", "--config", d.serveConfig, "--reason", "node drained", "--actor", "ops", d.fleet, "b-"+d.id)
	if code != exitOK || !strings.Contains(out, "retired "+d.fleet+"/b-"+d.id) {
		t.Fatalf("workers retire: %d %s%s", code, out, errOut)
	}
	prom.waitResolved(t, "WorkerShutdownStuck", map[string]string{"worker_instance": "b-" + d.id})

	foreignMissingResolves(t, d, prom)
	hostnamePidRestartResolves(t, d, prom)
	t.Logf("live alert test took %s", time.Since(start).Round(time.Second))
}

// foreignMissingResolves: a worker redrive did not write — the protocol
// page's Python publisher, writing only its key — is exported; killed, it
// fires WorkerHeartbeatMissing; back under the same identity, the alert
// resolves.
func foreignMissingResolves(t *testing.T, d *liveDeployment, prom *promServer) {
	t.Helper()
	py := startLivePython(t, d.py, "py-a")
	ts := fmt.Sprintf(`worker_heartbeat_timestamp_seconds{type=%q,worker_instance="py-a"}`, d.py)
	poll(t, "the python publisher's heartbeat scraped", func() bool { return len(prom.query(t, ts)) == 1 },
		func() string { return fmt.Sprint(prom.query(t, ts)) })
	_ = py.Process.Kill()
	_ = py.Wait()
	miss := map[string]string{"type": d.py, "worker_instance": "py-a"}
	prom.waitAlert(t, "WorkerHeartbeatMissing", miss)
	startLivePython(t, d.py, "py-a")
	prom.waitResolved(t, "WorkerHeartbeatMissing", miss)
}

// hostnamePidRestartResolves: a worker without heartbeat.instance beats
// as hostname-pid; killed, it fires WorkerHeartbeatMissing; its
// successor on the same host (a new pid) retires it, audited with the
// successor as the actor, and the alert resolves without an operator.
func hostnamePidRestartResolves(t *testing.T, d *liveDeployment, prom *promServer) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	first := startLiveWorker(t, d.hostCfg, "", d.dir) // ${LIVE_POD} empty: hostname-pid
	inst := host + "-" + fmt.Sprint(first.cmd.Process.Pid)
	running := fmt.Sprintf(`redrive_worker_running_instances{type=%q}`, d.host)
	poll(t, "the hostname-pid worker running", func() bool {
		s := prom.query(t, running)
		return len(s) == 1 && s[0].Value == "1"
	}, first.log.String)
	first.kill(t)
	miss := map[string]string{"type": d.host, "worker_instance": inst}
	prom.waitAlert(t, "WorkerHeartbeatMissing", miss)
	second := startLiveWorker(t, d.hostCfg, "", d.dir)
	prom.waitResolved(t, "WorkerHeartbeatMissing", miss)
	code, out, errOut := cli(t, "workers", "--config", d.serveConfig, "--retired", "5")
	successor := host + "-" + fmt.Sprint(second.cmd.Process.Pid)
	if code != exitOK || !strings.Contains(out, inst) || !strings.Contains(out, successor) {
		t.Errorf("the retirement of %s by %s is not in the audit: %d\n%s%s", inst, successor, code, out, errOut)
	}
}

// startLivePython runs docs/examples/heartbeat_publisher.py for typ and
// instance with the live test's heartbeat timing; killed at the end.
func startLivePython(t *testing.T, typ, instance string) *exec.Cmd {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH (Debian's python3; .ci/run installs it): %v", err)
	}
	cmd := exec.Command(py, filepath.Join("..", "..", "docs", "examples", "heartbeat_publisher.py"))
	cmd.Env = append(os.Environ(), "REDIS_ADDR="+testenv.Redis.URL(), "WORKER_TYPE="+typ, "WORKER_INSTANCE="+instance,
		"HEARTBEAT_INTERVAL="+fmt.Sprint(liveBeat.Seconds()), "HEARTBEAT_TTL=1", "HEARTBEAT_SHUTDOWN_TTL=1")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the python publisher: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// checkDeadLetterOrigin: the stored entry names its worker and the worker
// instance that dead-lettered it.
func checkDeadLetterOrigin(t *testing.T, d *liveDeployment, dlqName, worker, instance string) {
	t.Helper()
	code, body := httpGet("http://" + d.admin + "/internal/v1/dlq/" + dlqName)
	var page struct {
		Entries []struct {
			Worker         string `json:"worker"`
			WorkerInstance string `json:"worker_instance"`
		} `json:"entries"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Entries) != 1 {
		t.Fatalf("GET dlq %s: %d %s", dlqName, code, body)
	}
	if e := page.Entries[0]; e.Worker != worker || e.WorkerInstance != instance {
		t.Errorf("dead letter from worker %q instance %q, want %q %q", e.Worker, e.WorkerInstance, worker, instance)
	}
}

// checkStuckShown: `redrive workers` and the console's Workers page show
// the stuck instance with its lag.
func checkStuckShown(t *testing.T, d *liveDeployment, instance string) {
	t.Helper()
	code, out, errOut := cli(t, "workers", "--config", d.serveConfig)
	f := fields(out, d.stall+" ")
	// Exit 3 (WARNING) at least: the stuck instance; 4 when another
	// configured worker of the deployment is missing meanwhile.
	if (code != exitWarning && code != exitCritical) || len(f) < 4 || f[1] != instance || f[3] != "WARNING" || !strings.Contains(out, "while lag is 3") {
		t.Errorf("redrive workers does not show %s stuck with lag 3: %d\n%s%s", instance, code, out, errOut)
	}
	code, page := httpGet("http://" + d.admin + "/workers")
	if code != http.StatusOK || !strings.Contains(page, instance) || !strings.Contains(page, "while lag is 3") {
		t.Errorf("console /workers (%d) does not show %s stuck with lag 3:\n%s", code, instance, page)
	}
}
