package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/redrive/redrive/broker/kafka"
	_ "github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// TestKeptDLQs: one DLQ per RabbitMQ worker; one per Kafka topic, with the
// most severe severity and the longest retention of its workers.
func TestKeptDLQs(t *testing.T) {
	for _, tt := range []struct {
		broker string
		want   string
	}{
		{"rabbitmq", "map[a.w1.dlq:{info 720h0m0s} a.w2.dlq:{critical 24h0m0s} a.w3.dlq:{warning -1ns} b.w4.dlq:{warning 720h0m0s}]"},
		{"kafka", "map[a.dlq:{critical -1ns} b.dlq:{warning 720h0m0s}]"},
	} {
		path := filepath.Join(t.TempDir(), "redrive.yaml")
		if err := os.WriteFile(path, []byte(fmt.Sprintf(`
broker: %s
kafka: {brokers: [127.0.0.1:9092]}
workers:
  - {name: w1, topic: a, dlq: {severity: info}}
  - {name: w2, topic: a, dlq: {severity: critical, retention: 1d}}
  - {name: w3, topic: a, dlq: {retention: forever}}
  - {name: w4, topic: b}
`, tt.broker)), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := assembly.Router(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(keptDLQs(c, r)); got != tt.want {
			t.Errorf("%s: keptDLQs = %s, want %s", tt.broker, got, tt.want)
		}
	}
}

// TestForeignDLQsKept: the foreign DLQ topics of kafka.foreign_dlqs are
// kept with their own severity and retention (defaults: warning, 30d) and
// replay to their replay_to topic, beside the workers' DLQs.
func TestForeignDLQsKept(t *testing.T) {
	c, err := config.Parse([]byte(`
broker: kafka
kafka:
  brokers: [127.0.0.1:9092]
  foreign_dlqs:
    - {topic: orders.DLT, format: spring, severity: critical, retention: forever, replay_to: orders}
    - {topic: dlq-jdbc-sink, replay_to: events}
workers: [{name: w, topic: a}]
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := assembly.Router(c)
	if err != nil {
		t.Fatal(err)
	}
	const want = "map[a.dlq:{warning 720h0m0s} dlq-jdbc-sink:{warning 720h0m0s} orders.DLT:{critical -1ns}]"
	if got := fmt.Sprint(keptDLQs(c, r)); got != want {
		t.Errorf("keptDLQs = %s, want %s", got, want)
	}
	// DLQNames: the same DLQs, sorted, for the CLI's completion.
	if names, err := DLQNames(c); err != nil || fmt.Sprint(names) != "[a.dlq dlq-jdbc-sink orders.DLT]" {
		t.Errorf("DLQNames = %q, %v", names, err)
	}
	routes := replayRoutes(c, r)
	if len(routes) != 3 || routes[0].Foreign || routes[1].DLQ != "orders.DLT" || !routes[1].Foreign ||
		routes[1].Target != "orders" || routes[2].DLQ != "dlq-jdbc-sink" || routes[2].Target != "events" || !routes[2].Foreign {
		t.Errorf("replayRoutes = %+v", routes)
	}
}

// TestForeignWorkersAndQueues: a worker declared foreign replays to its
// topic on Kafka (every group) and to its queue on RabbitMQ; the foreign
// DLQ queues of rabbitmq.foreign_dlqs are kept with their severity and
// retention, and replay to the configured exchange or where x-death says.
func TestForeignWorkersAndQueues(t *testing.T) {
	k, err := config.Parse([]byte("broker: kafka\nkafka: {brokers: [127.0.0.1:9092]}\nworkers: [{name: java, topic: a, foreign: true}, {name: w, topic: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := assembly.Router(k)
	if err != nil {
		t.Fatal(err)
	}
	routes := replayRoutes(k, r)
	if len(routes) != 2 || routes[0].Target != "a" || !routes[0].EveryGroup || routes[0].Worker != "java" || routes[1].Target != "b.retry.w" || routes[1].EveryGroup {
		t.Errorf("kafka replayRoutes = %+v", routes)
	}
	if subs := k.RunSubscriptions(); len(subs) != 1 || subs[0].Group != "w" || len(k.Subscriptions()) != 2 {
		t.Errorf("RunSubscriptions = %+v: the foreign worker is not run, its topology is declared", subs)
	}

	c, err := config.Parse([]byte(`
broker: rabbitmq
rabbitmq:
  foreign_dlqs:
    - {queue: attune.dlx.queue, severity: critical, retention: forever, replay_to: {x_death_exchanges: [attune.executions]}}
    - {queue: legacy.failed, replay_to: {exchange: legacy, routing_key: jobs}}
workers: [{name: py, topic: a, foreign: true}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if r, err = assembly.Router(c); err != nil {
		t.Fatal(err)
	}
	const want = "map[a.py.dlq:{warning 720h0m0s} attune.dlx.queue:{critical -1ns} legacy.failed:{warning 720h0m0s}]"
	if got := fmt.Sprint(keptDLQs(c, r)); got != want {
		t.Errorf("keptDLQs = %s, want %s", got, want)
	}
	routes = replayRoutes(c, r)
	if len(routes) != 3 || routes[0].Target != "a.py" || routes[0].EveryGroup ||
		routes[1].DLQ != "attune.dlx.queue" || routes[1].Resolved() || !routes[1].Foreign ||
		routes[2].DLQ != "legacy.failed" || routes[2].Exchange != "legacy" || routes[2].Target != "jobs" {
		t.Errorf("rabbitmq replayRoutes = %+v", routes)
	}
}
