package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestOutboxAlertLive runs alerts.yml (only `for:` shortened) in a real
// Prometheus scraping a fresh `redrive serve` with exactly_once enabled
// (stalled_after 1s): a message committed to a topic RabbitMQ refuses (no
// queue bound) waits in the outbox and fires OutboxNotDraining for the
// schema; once a worker's queue for the topic exists, the relay publishes
// it and the alert resolves.
func TestOutboxAlertLive(t *testing.T) {
	e := newServeEnv(t)
	schema := "live_eo_" + strings.ToLower(broker.NewMessageID()[:8])
	t.Cleanup(func() { testenv.DropSchema(t, schema) })
	appendConfig(t, e.path, fmt.Sprintf("exactly_once: {enabled: true, url: %q, schema: %s, stalled_after: 1s, poll_interval: 50ms}\n",
		testenv.PostgreSQL.URL(), schema))
	if code, out, errOut := cli(t, "topology", "apply", "--config", e.path); code != exitOK {
		t.Fatalf("topology apply: %d %s%s", code, out, errOut)
	}
	d := startDaemon(t, "serve", "--config", e.path, "--sample-interval", "500ms")
	prom := startPrometheus(t, strings.TrimPrefix(e.metrics, "http://"))
	poll(t, "the outbox scraped", func() bool {
		s := prom.query(t, fmt.Sprintf(`redrive_outbox_up{schema=%q}`, schema))
		return len(s) == 1 && s[0].Value == "1"
	}, d.stderr.String)

	// A topic nobody consumes yet: RabbitMQ refuses it, the relay holds it.
	refused := e.topic + ".later"
	pool, err := pgxpool.New(t.Context(), testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	defer pool.Close()
	s, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(t.Context(), tx, refused, broker.Message{Value: []byte("invoice 8 paid")}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	match := map[string]string{"schema": schema, "severity": "critical"}
	a := prom.waitAlert(t, "OutboxNotDraining", match)
	if since := a.ActiveAt.Sub(written); since < time.Second {
		t.Errorf("OutboxNotDraining active %s after the write, want no sooner than stalled_after (1s)", since)
	}

	// A worker of the topic declares its queue: the relay publishes.
	c, err := config.Load(e.path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openBroker(context.Background(), c)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer b.Close()
	late := broker.Subscription{Topic: refused, Group: "late"}
	t.Cleanup(func() { testenv.DeleteQueues(rabbit.Queue(refused, "late"), rabbit.DLQ(rabbit.Queue(refused, "late"))) })
	if err := b.Declare(t.Context(), late); err != nil {
		t.Fatal(err)
	}
	prom.waitResolved(t, "OutboxNotDraining", match)
	if smp, err := s.Sample(t.Context()); err != nil || smp.Unsent != 0 {
		t.Errorf("outbox after the alert resolved: %+v %v, want empty", smp, err)
	}
}
