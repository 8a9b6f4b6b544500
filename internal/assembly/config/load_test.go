package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/retrypolicy"
)

// The example configurations shipped in configs/.
const (
	exampleRabbitMQ = "../../../configs/redrive.yaml"
	exampleKafka    = "../../../configs/kafka.yaml"
	exampleWorkers  = "../../../configs/workers.yaml"
)

// clearExampleEnv unsets the variables the examples reference, so that they
// are checked with their ${VAR:-default} values.
func clearExampleEnv(t *testing.T) {
	for _, v := range []string{"RABBITMQ_URL", "KAFKA_BROKERS", "REDIS_ADDR", "REDIS_PASSWORD", "DATABASE_URL", "REDRIVE_ADMIN_TOKEN"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

// wantWorker is one row of the reference workers table.
type wantWorker struct {
	name, topic, severity string
	maxRetries            int
	delays                []time.Duration
	forever               bool
}

var referenceWorkers = []wantWorker{
	{"ton-deposit-watcher", "escrow.commands", "critical", 5, []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}, true},
	{"payout-executor", "escrow.commands", "critical", 5, []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}, true},
	{"refund-executor", "escrow.commands", "critical", 5, []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}, true},
	{"deal-timeout-worker", "deal.deadlines", "warning", 3, []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}, false},
	{"post-scheduler", "delivery.commands", "warning", 3, []time.Duration{time.Second, 10 * time.Second, 60 * time.Second}, false},
	{"delivery-verifier", "delivery.commands", "warning", 3, []time.Duration{time.Second, 10 * time.Second, 60 * time.Second}, false},
	{"reconciliation-worker", "reconciliation.triggers", "warning", 2, []time.Duration{5 * time.Second, 60 * time.Second}, false},
}

// checkReferenceWorkers checks ws against the reference table row by row.
func checkReferenceWorkers(t *testing.T, ws []Worker) {
	t.Helper()
	if len(ws) != len(referenceWorkers) {
		t.Fatalf("%d workers, want %d", len(ws), len(referenceWorkers))
	}
	for i, want := range referenceWorkers {
		w := ws[i]
		t.Run(want.name, func(t *testing.T) {
			if w.Name != want.name || w.Topic != want.topic {
				t.Errorf("workers[%d] = %s on %s, want %s on %s", i, w.Name, w.Topic, want.name, want.topic)
			}
			if string(w.DLQ.Severity) != want.severity {
				t.Errorf("severity %q, want %q", w.DLQ.Severity, want.severity)
			}
			if w.DLQ.Retention.Forever != want.forever {
				t.Errorf("retention %s, forever want %v", w.DLQ.Retention, want.forever)
			}
			if !want.forever && w.DLQ.Retention.Duration != 30*24*time.Hour {
				t.Errorf("retention %s, want 30d", w.DLQ.Retention)
			}
			p := w.Policy()
			if p.MaxRetries != want.maxRetries || p.Unlimited {
				t.Errorf("max retries %d (unlimited %v), want %d", p.MaxRetries, p.Unlimited, want.maxRetries)
			}
			s, ok := p.Backoff.(retrypolicy.Schedule)
			if !ok || !slices.Equal(s.Delays, want.delays) || s.NoRepeat {
				t.Errorf("backoff %#v, want schedule %v repeating", p.Backoff, want.delays)
			}
			// The retry after the last failure allowed waits the last step;
			// one failure more dead-letters.
			last := p.Next(want.maxRetries, "error", 0)
			if !last.Retry || last.Delay != want.delays[len(want.delays)-1] {
				t.Errorf("failure %d: %+v, want a retry after %s", want.maxRetries, last, want.delays[len(want.delays)-1])
			}
			if v := p.Next(want.maxRetries+1, "error", 0); v.Retry || v.Reason != retrypolicy.ReasonMaxRetries {
				t.Errorf("failure %d: %+v, want dead-lettered for max_retries", want.maxRetries+1, v)
			}
			sub := w.Subscription()
			if sub.Topic != want.topic || sub.Group != want.name || sub.MaxAge != 5*time.Minute ||
				sub.Concurrency != 1 || sub.Prefetch != 2 || string(sub.DLQ.Severity) != want.severity {
				t.Errorf("subscription %+v", sub)
			}
			if err := sub.WithDefaults().Validate(); err != nil {
				t.Errorf("subscription invalid: %v", err)
			}
		})
	}
}

func TestWorkersYAML(t *testing.T) {
	ws, err := LoadWorkers(exampleWorkers)
	if err != nil {
		t.Fatal(err)
	}
	checkReferenceWorkers(t, ws)

	if len(ws) != 7 {
		t.Fatalf("%d workers, want 7", len(ws))
	}
	byName := make(map[string]Worker, len(ws))
	for _, w := range ws {
		byName[w.Name] = w
	}
	for _, want := range referenceWorkers {
		p := byName[want.name].Policy()
		if p.MaxRetries != want.maxRetries || p.Backoff.String() != ScheduleBackoff(want.delays...).String() {
			t.Errorf("worker %q policy = %s", want.name, p)
		}
	}
	def := Worker{}.Policy()
	if def.MaxRetries != DefaultMaxRetries || def.Backoff.String() != DefaultBackoff {
		t.Errorf("default policy = %s, want max %d retries, backoff %s", def, DefaultMaxRetries, DefaultBackoff)
	}
}

func TestExampleConfigs(t *testing.T) {
	clearExampleEnv(t)
	for _, tt := range []struct {
		path, broker string
	}{
		{exampleRabbitMQ, "rabbitmq"},
		{exampleKafka, "kafka"},
	} {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			c, err := Load(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if string(c.Broker) != tt.broker {
				t.Errorf("broker %q, want %q", c.Broker, tt.broker)
			}
			checkReferenceWorkers(t, c.Workers)

			ws, err := LoadWorkers(exampleWorkers)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ws {
				if got, want := c.Workers[i].Policy().String(), ws[i].Policy().String(); got != want {
					t.Errorf("%s: policy %s, configs/workers.yaml has %s", ws[i].Name, got, want)
				}
			}

			want := map[string]Threshold{
				"escrow.commands":         {100, 500},
				"deal.events":             {500, 2000},
				"deal.deadlines":          {50, 200},
				"delivery.commands":       {200, 1000},
				"notifications.outbox":    {500, 2000},
				"reconciliation.triggers": {10, 50},
			}
			if !reflect.DeepEqual(c.Lag.Thresholds, want) {
				t.Errorf("lag thresholds = %v, want %v", c.Lag.Thresholds, want)
			}
			if tt.broker == "kafka" && !slices.Equal(c.Kafka.Brokers, []string{"127.0.0.1:9092"}) {
				t.Errorf("kafka brokers = %q", c.Kafka.Brokers)
			}
			if tt.broker == "rabbitmq" {
				if c.RabbitMQ.URL != DefaultRabbitMQURL {
					t.Errorf("rabbitmq url = %q", c.RabbitMQ.URL)
				}
				if got := c.RabbitMQ.Delay.MaxDelay(); got != 65535*time.Second {
					t.Errorf("max delay %s, want 18h12m15s", got)
				}
			}
		})
	}
}

func TestExampleConfigsTakeTheEnvironment(t *testing.T) {
	clearExampleEnv(t)
	t.Setenv("KAFKA_BROKERS", "k1:9092,k2:9092")
	t.Setenv("REDRIVE_ADMIN_TOKEN", "tok-from-env")
	c, err := Load(exampleKafka)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Kafka.Brokers, []string{"k1:9092", "k2:9092"}) || c.Admin.Token != "tok-from-env" {
		t.Errorf("brokers %q token %q", c.Kafka.Brokers, c.Admin.Token)
	}
}

func TestDefaults(t *testing.T) {
	c := mustParse(t, minimal, nil)
	w := c.Workers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"rabbitmq.url", c.RabbitMQ.URL, "amqp://guest:guest@127.0.0.1:5672/"},
		{"rabbitmq.prefix", c.RabbitMQ.Prefix, "redrive"},
		{"rabbitmq.queue_type", c.RabbitMQ.QueueType, "classic"},
		{"rabbitmq.delay", c.RabbitMQ.Delay, Delay{Mode: "route", Resolution: Duration(time.Second), Factor: 4, Levels: 8, QueueType: "classic"}},
		{"kafka.partitions", c.Kafka.Partitions, 3},
		{"kafka.replication_factor", c.Kafka.ReplicationFactor, -1},
		{"kafka.client_id", c.Kafka.ClientID, "redrive"},
		{"kafka.commit_interval", c.Kafka.CommitInterval, Duration(time.Second)},
		{"kafka.fetch_max_wait", c.Kafka.FetchMaxWait, Duration(500 * time.Millisecond)},
		{"kafka.heartbeat_interval", c.Kafka.HeartbeatInterval, Duration(3 * time.Second)},
		{"kafka.session_timeout", c.Kafka.SessionTimeout, Duration(45 * time.Second)},
		{"kafka.rebalance_timeout", c.Kafka.RebalanceTimeout, Duration(60 * time.Second)},
		{"redis.addr", c.Redis.Addr, "127.0.0.1:6379"},
		{"admin.listen", c.Admin.Listen, "127.0.0.1:8080"},
		{"exporter.listen", c.Exporter.Listen, "127.0.0.1:9477"},
		{"dlq.max_payload_preview", c.DLQ.MaxPayloadPreview, 64 << 10},
		{"heartbeat", c.Heartbeat, Heartbeat{Interval: Duration(10 * time.Second), TTL: Duration(30 * time.Second), MissingAfter: Duration(60 * time.Second), IdleAfter: Duration(5 * time.Minute), ShutdownStuckAfter: Duration(2 * time.Minute), MaxInstances: 10000}},
		{"health.listen", c.Health.Listen, ""},
		{"queue_ttl", *w.QueueTTL, Duration(5 * time.Minute)},
		{"concurrency", w.Concurrency, 1},
		{"prefetch", w.Prefetch, 2},
		{"max_claims (unset: it depends on the claim counter)", w.MaxClaims, (*int)(nil)},
		{"subscription max claims", w.Subscription().MaxClaims, 5},
		{"subscription max claims is a default", w.Subscription().MaxClaimsDefault, true},
		{"max_retries", *w.Retry.MaxRetries, 5},
		{"backoff", w.Retry.Backoff.String(), "1s -> 5s -> 30s -> 5m -> 30m"},
		{"repeat_last", *w.Retry.RepeatLast, true},
		{"mode", w.Retry.Mode, "blocking"},
		{"dlq.severity", w.DLQ.Severity, broker.SeverityWarning},
		{"dlq.retention", w.DLQ.Retention, RetainFor(30 * 24 * time.Hour)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// Explicit values that differ from the zero value are kept.
	c = mustParse(t, `
broker: rabbitmq
workers:
  - {name: w, topic: t, queue_ttl: 0s, concurrency: 4, max_claims: 0, retry: {max_retries: 0, repeat_last: false, backoff: [2s]}}
  - {name: v, topic: t, concurrency: 3, prefetch: 1, retry: {unlimited: true}}
`, nil)
	w, v := c.Workers[0], c.Workers[1]
	if *w.QueueTTL != 0 || w.Prefetch != 8 || *w.Retry.MaxRetries != 0 || *w.Retry.RepeatLast {
		t.Errorf("explicit values lost: queue_ttl %s prefetch %d max_retries %d repeat_last %v", *w.QueueTTL, w.Prefetch, *w.Retry.MaxRetries, *w.Retry.RepeatLast)
	}
	if v.Prefetch != 1 || v.Retry.MaxRetries != nil || !v.Policy().Unlimited {
		t.Errorf("v: prefetch %d max_retries %v unlimited %v", v.Prefetch, v.Retry.MaxRetries, v.Policy().Unlimited)
	}
	if *w.MaxClaims != 0 || w.Subscription().MaxClaims != 0 || w.Subscription().MaxClaimsDefault {
		t.Errorf("explicit max_claims 0 (off) became %d", *w.MaxClaims)
	}
	if s := w.Subscription(); s.MaxAge != 0 || s.Policy.MaxRetries != 0 || s.Policy.Backoff.(retrypolicy.Schedule).NoRepeat != true {
		t.Errorf("subscription of w: %+v", s)
	}
}

func TestPolicyAndSubscription(t *testing.T) {
	c := mustParse(t, `
broker: kafka
kafka: {brokers: [k:9092]}
workers:
  - name: w
    topic: t
    queue_ttl: 1m
    concurrency: 3
    retry:
      max_retries: 4
      backoff: {exponential: {initial: 2s, multiplier: 3, max: 1m, jitter: 0.1}}
      non_retriable: [validation]
      max_elapsed: 1h
      mode: non_blocking
    dlq: {severity: info, retention: forever}
`, nil)
	sub := c.Workers[0].Subscription()
	want := broker.Subscription{
		Topic: "t", Group: "w", RetryMode: broker.NonBlocking, Concurrency: 3, Prefetch: 6, MaxAge: time.Minute, MaxClaims: 5, MaxClaimsDefault: true,
		DLQ: broker.DLQOptions{Severity: "info", Retention: broker.Forever},
		Policy: retrypolicy.Policy{
			MaxRetries:   4,
			Backoff:      retrypolicy.Exponential{Initial: 2 * time.Second, Multiplier: 3, Max: time.Minute, Jitter: 0.1},
			NonRetriable: []string{"validation"},
			MaxElapsed:   time.Hour,
		},
	}
	if !reflect.DeepEqual(sub, want) {
		t.Errorf("Subscription() =\n%+v\nwant\n%+v", sub, want)
	}
	if err := sub.Validate(); err != nil {
		t.Errorf("subscription invalid: %v", err)
	}
	if subs := c.Subscriptions(); len(subs) != 1 || !reflect.DeepEqual(subs[0], want) {
		t.Errorf("Subscriptions() = %+v", subs)
	}
	// A worker built in code gets the documented defaults.
	p := Worker{Name: "x", Topic: "t"}.Policy()
	if p.MaxRetries != 5 || p.Backoff.String() != DefaultBackoff {
		t.Errorf("default policy = %s", p)
	}
}

func TestWriteYAMLRoundTrip(t *testing.T) {
	clearExampleEnv(t)
	docs := map[string]string{"minimal": minimal, "literal refs": minimal + "admin: {token: \"token-a$${B}c\"}\n"}
	for _, path := range []string{exampleRabbitMQ, exampleKafka} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(path)] = string(b)
	}
	docs["unlimited"] = "broker: kafka\nkafka: {brokers: [k:1]}\nworkers: [{name: w, topic: t, queue_ttl: 0s, retry: {unlimited: true, repeat_last: false, backoff: [0s, 1s]}}]"
	docs["exponential"] = "broker: rabbitmq\nworkers: [{name: w, topic: t, retry: {backoff: {exponential: {initial: 1500ms, multiplier: 1.5, max: 1d2h, jitter: 0.25}}}, dlq: {retention: 36h}}]"
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			c1 := mustParse(t, doc, nil)
			var out bytes.Buffer
			if err := c1.WriteYAML(&out); err != nil {
				t.Fatal(err)
			}
			c2, err := parse(out.Bytes(), env(map[string]string{"B": "expanded"}))
			if err != nil {
				t.Fatalf("output does not parse back: %v\n%s", err, out.String())
			}
			c2.Redis.set = c1.Redis.set // WriteYAML writes every section, redis: too
			if !reflect.DeepEqual(c1, c2) {
				t.Errorf("round trip differs:\n%+v\n%+v\noutput:\n%s", c1, c2, out.String())
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	_, err := Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "load config: open ") {
		t.Errorf("missing file: %v", err)
	}

	p := write("syntax.yaml", "broker: [rabbitmq\n")
	_, err = Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+": invalid configuration: yaml: line") {
		t.Errorf("syntax error: %v", err)
	}

	p = write("fields.yaml", "broker: rabit\n")
	_, err = Load(p)
	assertLines(t, err, `broker: "rabit" is not kafka or rabbitmq`)
	if strings.Contains(err.Error(), p) {
		t.Errorf("field problems name their field, not the file: %v", err)
	}

	p = write("workers.yaml", "broker: rabbitmq\nworkers:\n  - {name: w, topic: t, retry: {max_retries: -2}}\n  - {name: w, topic: \"\"}\n")
	_, err = LoadWorkers(p)
	assertLines(t, err,
		`broker: unknown key (line 1)`,
		"workers[0].retry.max_retries: -2 is negative (unlimited retries must be explicit: set unlimited: true)",
		`workers[1].name: "w" is already the name of workers[0]`,
		"workers[1].topic: required",
	)
	_, err = LoadWorkers(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadWorkers missing file: %v", err)
	}
}
