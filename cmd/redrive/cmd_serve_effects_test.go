package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestServeRelaysTheOutbox: with exactly_once enabled, serve migrates the
// tables in the schema named, relays what a program commits to its
// outbox (a raw consumer of the worker's queue gets it, with the id it
// was written with), and exports the outbox's metrics.
func TestServeRelaysTheOutbox(t *testing.T) {
	e := newServeEnv(t)
	schema := "serve_eo_" + strings.ToLower(broker.NewMessageID()[:8])
	t.Cleanup(func() { testenv.DropSchema(t, schema) })
	appendConfig(t, e.path, fmt.Sprintf("exactly_once: {enabled: true, url: %q, schema: %s, poll_interval: 50ms}\n", testenv.PostgreSQL.URL(), schema))
	if code, out, errOut := cli(t, "topology", "apply", "--config", e.path); code != exitOK {
		t.Fatalf("topology apply: %d %s%s", code, out, errOut)
	}
	d := startDaemon(t, "serve", "--config", e.path)
	up := fmt.Sprintf(`redrive_outbox_up{schema=%q} 1`, schema)
	var metrics string
	eventually(t, "the outbox's metrics on /metrics", func() bool {
		_, metrics = httpGet(e.metrics + "/metrics")
		return strings.Contains(metrics, up)
	}, func() string { return metrics + d.stderr.String() })

	pool, err := pgxpool.New(t.Context(), testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	defer pool.Close()
	s, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ch := testenv.AMQP(t)
	msgs, err := ch.Consume(e.queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := []broker.Message{{Value: []byte("invoice 7 paid")}}
	if err := s.Publish(t.Context(), tx, e.topic, m...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-msgs:
		if got.MessageId != m[0].ID || string(got.Body) != "invoice 7 paid" {
			t.Errorf("got %q (id %s), want the outbox's message (id %s)", got.Body, got.MessageId, m[0].ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the outbox's message did not arrive; serve's log:\n%s", d.stderr)
	}
	eventually(t, "the message counted published and the outbox empty", func() bool {
		_, metrics = httpGet(e.metrics + "/metrics")
		return strings.Contains(metrics, "redrive_outbox_published_total 1") &&
			strings.Contains(metrics, fmt.Sprintf(`redrive_outbox_unsent{schema=%q} 0`, schema))
	}, func() string { return metrics })
}

// appendConfig appends doc (top-level YAML keys) to the configuration at
// path.
func appendConfig(t *testing.T, path, doc string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(doc); err != nil {
		t.Fatal(err)
	}
}
