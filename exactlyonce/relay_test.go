package exactlyonce_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/tcpproxy"
	"github.com/redrive/redrive/internal/testenv"
)

// TestRelayDatabaseOutage: a relay whose database connections are all cut
// (a proxy taken down, as a PostgreSQL restart does) loses its session
// and its shards, opens another once the database is back, and publishes
// what was committed meanwhile; nothing is lost.
func TestRelayDatabaseOutage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	be := backends[1] // Kafka
	tp := topic(t)
	b := be.open(t, be.sub(tp, "raw"))
	got := rawConsume(t, be, tp, "raw")

	u, err := url.Parse(testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatal(err)
	}
	px := tcpproxy.New(t, u.Host)
	u.Host = px.Addr()
	pool, err := pgxpool.New(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	behind, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: e.schema, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, stop := runRelay(t, behind, exactlyonce.RelayConfig{Broker: b, PollInterval: 50 * time.Millisecond, RebalanceInterval: 50 * time.Millisecond})
	defer stop()
	testenv.Eventually(t, 30*time.Second, "the relay owning every shard", func() bool { return r.Shards() == exactlyonce.Shards })
	publishTx(t, e, tp, false, broker.Message{Key: []byte("k"), Value: []byte("before")})
	got.WaitUntil(t, 30*time.Second, "the message before the outage", func(r []received) bool { return len(r) == 1 })
	outboxEmpty(t, e) // its row deleted: what the outage may republish is not this one

	px.SetUp(false)
	testenv.Eventually(t, 30*time.Second, "the relay's session lost", func() bool { return r.Shards() == 0 })
	publishTx(t, e, tp, false, broker.Message{Key: []byte("k"), Value: []byte("during")}) // committed directly
	px.SetUp(true)
	all := got.WaitUntil(t, time.Minute, "the message committed during the outage", func(r []received) bool { return len(r) >= 2 })
	if len(all) != 2 || all[0].value != "before" || all[1].value != "during" {
		t.Errorf("received %+v, want before then during, once each", all)
	}
	outboxEmpty(t, e)
}

// outboxEmpty waits until the relays published and deleted every row.
func outboxEmpty(t testing.TB, e *env) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the outbox empty", func() bool {
		smp, err := e.store.Sample(t.Context())
		return err == nil && smp.Unsent == 0
	})
}
