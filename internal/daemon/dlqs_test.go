package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/redrive/redrive/broker/kafka"
	_ "github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
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
		r, err := backend.RouterOf(c)
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
	r, err := backend.RouterOf(c)
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
