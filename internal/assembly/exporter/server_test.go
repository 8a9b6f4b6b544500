package exporter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/lag"
)

// rabbitEnv is a deployment on the real services: a worker's topology on
// RabbitMQ under a prefix of its own, a heartbeat publisher on Redis under
// a key prefix of its own, a DLQ store in a PostgreSQL schema of its own,
// and an exporter over samplers of all three.
type rabbitEnv struct {
	topic, group, queue, dlqName string
	b                            *rabbit.Broker
	pub                          *heartbeat.Publisher
	store                        dlq.Store
	lag                          *lag.Sampler
	hb                           *heartbeat.Sampler
	dlqs                         *exporter.DLQSampler
	srv                          *exporter.Server
	url                          string // the exporter's base URL
}

func newRabbitEnv(t *testing.T) *rabbitEnv {
	t.Helper()
	id := strings.ToLower(broker.NewMessageID()[:8])
	e := &rabbitEnv{topic: "exp." + id, group: "billing"}
	e.queue = rabbit.Queue(e.topic, e.group)
	e.dlqName = rabbit.DLQ(e.queue)

	cfg := rabbit.Config{URL: testenv.RabbitMQ.URL(), Prefix: "exp-" + id, Logger: quiet(),
		Delay: rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 2}}
	b, err := rabbit.New(t.Context(), cfg)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	sub := broker.Subscription{Topic: e.topic, Group: e.group}
	t.Cleanup(func() {
		_ = b.Close()
		deleteTopology(rabbit.Plan(cfg, sub))
	})
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatalf("declare: %v", err)
	}
	e.b = b

	prefix := "exptest:" + id + ":"
	rdb := newRedis(t, prefix)
	e.pub, err = heartbeat.NewPublisher(rdb, heartbeat.PublisherConfig{Type: e.group, Instance: "host-1", Prefix: prefix, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	mon, err := heartbeat.NewMonitor(rdb, heartbeat.MonitorConfig{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if e.hb, err = heartbeat.NewSampler(mon, heartbeat.SamplerConfig{Logger: quiet()}); err != nil {
		t.Fatal(err)
	}

	e.store = newStore(t)
	ops, err := operate.New(operate.Config{Store: e.store, Logger: quiet(),
		Policies: map[string]dlq.Policy{e.dlqName: {Severity: broker.SeverityCritical}}})
	if err != nil {
		t.Fatal(err)
	}
	e.dlqs = exporter.NewDLQSampler(ops.DLQs, exporter.DLQSamplerConfig{Logger: quiet()})

	e.lag = rabbitSampler(t, testenv.RabbitMQ.URL(), b.Names(), e.topic, e.group)
	e.srv, err = exporter.New(exporter.Config{
		Broker:     rabbit.Name,
		Lag:        e.lag,
		Groups:     []exporter.Group{{Group: e.group, Topic: e.topic}},
		Thresholds: lag.Thresholds{e.topic: {Warning: 2, Critical: 10}},
		Heartbeats: e.hb,
		DLQ:        e.dlqs,
		Collectors: []prometheus.Collector{e.dlqs},
		Logger:     quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// rabbitSampler measures the queues of one worker under names.
func rabbitSampler(t *testing.T, url string, names rabbit.Names, topic, group string) *lag.Sampler {
	t.Helper()
	queues := rabbit.WorkerQueues(names, []string{names.Tier(100), names.Tier(200)}, []broker.Subscription{{Topic: topic, Group: group}})
	r, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URL: url, DialTimeout: 2 * time.Second, Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	s, err := lag.NewSampler(lag.SamplerConfig{Monitor: r, Source: rabbit.Name, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sample takes one sample of every source.
func (e *rabbitEnv) sample(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	if err := e.lag.Sample(ctx); err != nil {
		t.Fatalf("lag sample: %v", err)
	}
	if err := e.hb.Sample(ctx); err != nil {
		t.Fatalf("heartbeat sample: %v", err)
	}
	if err := e.dlqs.Sample(ctx); err != nil {
		t.Fatalf("dlq sample: %v", err)
	}
}

func deleteTopology(plan []rabbit.Declaration, _ error) {
	testenv.DeleteTopology(plan, func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
}

func group(t *testing.T, h exporter.Health, name string) exporter.GroupHealth {
	t.Helper()
	if h.Components.Lag == nil {
		t.Fatalf("no lag component: %+v", h)
	}
	for _, g := range h.Components.Lag.Groups {
		if g.Group == name {
			return g
		}
	}
	t.Fatalf("no lag group %s in %+v", name, h.Components.Lag.Groups)
	return exporter.GroupHealth{}
}

// The whole life of a deployment's health on real RabbitMQ, Redis and
// PostgreSQL: not ready before the first samples; UP with empty DLQs and a
// healthy worker, every series of the scrape with its value; DEGRADED
// while a group queue holds messages nobody consumes, UP again once it is
// drained; DEGRADED while a DLQ has a pending entry.
func TestHealthAndScrapeOnRabbitMQ(t *testing.T) {
	e := newRabbitEnv(t)

	if code, body := get(t, e.url+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "not sampled yet") {
		t.Fatalf("/readyz before the first samples = %d %s, want 503 not sampled yet", code, body)
	}
	if code, h := health(t, e.url); code != http.StatusOK || h.Status != exporter.StatusDegraded || h.Components.Broker.Status != exporter.StatusUnknown {
		t.Fatalf("/healthz before the first samples = %d %+v, want 200 DEGRADED with broker UNKNOWN", code, h)
	}

	before := time.Now()
	if err := e.pub.Beat(t.Context()); err != nil {
		t.Fatalf("beat: %v", err)
	}
	after := time.Now()
	e.sample(t)

	if code, body := get(t, e.url+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after sampling = %d %s, want 200", code, body)
	}
	code, h := health(t, e.url)
	if code != http.StatusOK || h.Status != exporter.StatusUp || len(h.Reasons) != 0 {
		t.Fatalf("/healthz = %d %s %v, want 200 UP without reasons", code, h.Status, h.Reasons)
	}
	if b := h.Components.Broker; b == nil || b.Status != exporter.StatusUp || b.Broker != "rabbitmq" || b.SampledAt == nil {
		t.Errorf("broker component = %+v, want UP rabbitmq with a sample time", b)
	}
	if n, ok := h.Components.DLQ[e.dlqName]; !ok || n != 0 || len(h.Components.DLQ) != 1 {
		t.Errorf("dlq component = %v, want {%s: 0}", h.Components.DLQ, e.dlqName)
	}
	if w := h.Components.Workers; len(w) != 1 || w[0].Type != e.group || w[0].Instance != "host-1" || w[0].Status != "RUNNING" || w[0].Severity != "OK" {
		t.Errorf("workers component = %+v, want billing/host-1 RUNNING OK", w)
	}
	if g := group(t, h, e.group); g.Queue != e.queue || g.Lag != 0 || g.Level != "OK" || g.Status != "OK" || g.Health != exporter.StatusUp {
		t.Errorf("lag group = %+v, want queue %s with lag 0 OK/OK", g, e.queue)
	}

	fams := scrape(t, e.url)
	wantValue(t, fams, lag.MetricQueueDepth, map[string]string{"queue": e.queue}, 0)
	wantValue(t, fams, lag.MetricQueueDepth, map[string]string{"queue": e.dlqName}, 0)
	wantValue(t, fams, lag.MetricQueueConsumers, map[string]string{"queue": e.queue}, 0)
	wantValue(t, fams, lag.MetricUp, map[string]string{"source": "rabbitmq"}, 1)
	wantValue(t, fams, heartbeat.MetricWorkerStatus, map[string]string{"type": e.group, "worker_instance": "host-1", "condition": "ok", "severity": "ok"}, 1)
	wantValue(t, fams, operate.MetricPending, map[string]string{"dlq": e.dlqName, "severity": "critical"}, 0)
	beat, ok := testenv.Value(fams, heartbeat.MetricHeartbeatTimestamp, map[string]string{"type": e.group, "worker_instance": "host-1"})
	if !ok || beat < float64(before.UnixMilli())/1e3 || beat > float64(after.UnixMilli())/1e3 {
		t.Errorf("%s = %v (present %v), want the time of the beat, in [%v, %v]", heartbeat.MetricHeartbeatTimestamp, beat, ok,
			float64(before.UnixMilli())/1e3, float64(after.UnixMilli())/1e3)
	}
	if _, ok := testenv.Value(fams, "go_goroutines", nil); !ok {
		t.Error("no go_goroutines: the Go collector is not registered")
	}

	// Three messages wait in the group queue and nobody consumes them.
	for i := range 3 {
		if err := e.b.Publish(t.Context(), e.topic, broker.Message{Value: []byte{byte('a' + i)}}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	e.sample(t)
	wantValue(t, scrape(t, e.url), lag.MetricQueueDepth, map[string]string{"queue": e.queue}, 3)
	code, h = health(t, e.url)
	g := group(t, h, e.group)
	if code != http.StatusOK || h.Status != exporter.StatusDegraded || g.Lag != 3 || g.Level != "WARNING" || g.Status != "STOP" || g.Health != exporter.StatusDegraded {
		t.Fatalf("/healthz with 3 messages waiting = %d %s, group %+v; want 200 DEGRADED, lag 3 WARNING STOP", code, h.Status, g)
	}
	if !hasReason(h, "3 ready in "+e.queue) {
		t.Errorf("reasons %v do not name the waiting messages", h.Reasons)
	}
	purge(t, e.queue)
	e.sample(t)
	if _, h := health(t, e.url); h.Status != exporter.StatusUp {
		t.Fatalf("/healthz after draining = %s %v, want UP", h.Status, h.Reasons)
	}

	// A dead letter is pending.
	_, inserted, err := e.store.Insert(t.Context(), dlq.Record{Broker: rabbit.Name, DLQ: e.dlqName, Identity: "id-1",
		Severity: string(broker.SeverityCritical), Entry: dlq.Entry{Source: e.queue, Reason: "permanent", OriginalPartition: -1, OriginalOffset: -1}})
	if err != nil || !inserted {
		t.Fatalf("insert: %v %v", inserted, err)
	}
	e.sample(t)
	code, h = health(t, e.url)
	if code != http.StatusOK || h.Status != exporter.StatusDegraded || h.Components.DLQ[e.dlqName] != 1 || !hasReason(h, "dlq "+e.dlqName+": 1 pending") {
		t.Fatalf("/healthz with a pending dead letter = %d %s %v %v; want 200 DEGRADED, 1 pending", code, h.Status, h.Components.DLQ, h.Reasons)
	}
	wantValue(t, scrape(t, e.url), operate.MetricPending, map[string]string{"dlq": e.dlqName, "severity": "critical"}, 1)
}

func purge(t *testing.T, queue string) {
	t.Helper()
	if _, err := testenv.AMQP(t).QueuePurge(queue, false); err != nil {
		t.Fatalf("purge %s: %v", queue, err)
	}
}

// A broker on a closed port: DOWN with 503, not ready, redrive_lag_up 0 and
// no depth series (withheld rather than stale).
func TestBrokerDown(t *testing.T) {
	url := "amqp://guest:s3cret@" + testenv.ClosedAddr(t) + "/"
	names := rabbit.Names{Prefix: "down"}
	s := rabbitSampler(t, url, names, "t", "g")
	srv, err := exporter.New(exporter.Config{Broker: rabbit.Name, Lag: s, Logger: quiet(),
		Groups: []exporter.Group{{Group: "g", Topic: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	if err := s.Sample(context.Background()); err == nil {
		t.Fatal("sampling a closed port succeeded")
	}
	code, h := health(t, ts.URL)
	if code != http.StatusServiceUnavailable || h.Status != exporter.StatusDown || h.Components.Broker.Status != exporter.StatusDown {
		t.Fatalf("/healthz = %d %+v, want 503 DOWN", code, h)
	}
	if !hasReason(h, "broker rabbitmq: unreachable") || strings.Contains(h.Components.Broker.Error, "s3cret") {
		t.Errorf("reasons %v / error %q: want unreachable, password masked", h.Reasons, h.Components.Broker.Error)
	}
	if code, body := get(t, ts.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "rabbitmq unreachable") {
		t.Errorf("/readyz = %d %s, want 503 rabbitmq unreachable", code, body)
	}
	fams := scrape(t, ts.URL)
	wantValue(t, fams, lag.MetricUp, map[string]string{"source": "rabbitmq"}, 0)
	if _, ok := fams[lag.MetricQueueDepth]; ok {
		t.Errorf("%s exported while the broker is down", lag.MetricQueueDepth)
	}
}

// Serve runs the samplers: /readyz turns 200 without anyone sampling by
// hand, and Serve returns once its context ends.
func TestServeRunsSamplers(t *testing.T) {
	e := newRabbitEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	lnDone := make(chan error, 1)
	ln := listen(t)
	go func() { lnDone <- e.srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	if code, h := health(t, base); code != http.StatusOK || h.Status != exporter.StatusUp {
		t.Errorf("/healthz = %d %s %v, want 200 UP", code, h.Status, h.Reasons)
	}
	cancel()
	if err := <-lnDone; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
