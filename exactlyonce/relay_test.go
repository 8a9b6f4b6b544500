package exactlyonce_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
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

// sizes records the bytes of each Publish call of a relay.
type sizes struct {
	broker.Broker
	mu    sync.Mutex
	calls [][]int
}

func (s *sizes) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	var call []int
	for _, m := range msgs {
		call = append(call, len(m.Value))
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	return s.Broker.Publish(ctx, topic, msgs...)
}

// TestRelayBatchBytes: a round ends with the message that passes
// BatchBytes (a larger one alone), so that large messages do not make a
// round's memory grow; every message still leaves, in order.
func TestRelayBatchBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	be := backends[1] // Kafka
	tp := topic(t)
	b := be.open(t, be.sub(tp, "raw"))
	got := rawConsume(t, be, tp, "raw")
	const kib = 1 << 10
	var msgs []broker.Message
	for i, n := range []int{200, 200, 200, 200, 700, 10, 10} { // KiB
		msgs = append(msgs, broker.Message{Key: []byte("k"), Value: bytes.Repeat([]byte{byte('a' + i)}, n*kib)})
	}
	publishTx(t, e, tp, false, msgs...) // written before the relay starts: it finds them all at once
	rec := &sizes{Broker: b}
	_, stop := runRelay(t, e.store, exactlyonce.RelayConfig{Broker: rec, BatchBytes: 500 * kib})
	defer stop()
	all := got.WaitUntil(t, time.Minute, "every message", func(r []received) bool { return len(r) >= len(msgs) })
	for i := range msgs {
		if all[i].value != string(msgs[i].Value) {
			t.Fatalf("message %d arrived out of order", i)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := [][]int{{200 * kib, 200 * kib, 200 * kib}, {200 * kib, 700 * kib}, {10 * kib, 10 * kib}}
	if fmt.Sprint(rec.calls) != fmt.Sprint(want) {
		t.Errorf("Publish calls of %v bytes, want %v: a round ends with the message that passes 500 KiB", rec.calls, want)
	}
}

// TestRelayParksATooLargeMessage: a message over the broker's size limit
// (broker.ErrTooLarge) is moved to redrive_outbox_parked, counted and
// logged, instead of holding its topic; the messages around it, of the
// same key, are published in order.
func TestRelayParksATooLargeMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tp := topic(t)
	_, brokers := kafkatest.Fake(t)
	kafkaClusters.Store(t, brokers)
	b := kafkatest.New(t, brokers, func(c *kafka.Config) { c.MaxMessageBytes = 64 << 10 })
	be := backends[1]
	if err := b.Declare(t.Context(), be.sub(tp, "raw")); err != nil {
		t.Fatal(err)
	}
	got := rawConsume(t, be, tp, "raw")
	msgs := []broker.Message{{Key: []byte("k"), Value: []byte("first")}, {Key: []byte("k"), Value: bytes.Repeat([]byte("x"), 100<<10)},
		{Key: []byte("k"), Value: []byte("last")}}
	publishTx(t, e, tp, false, msgs...)
	big := msgs[1]
	_, stop := runRelay(t, e.store, exactlyonce.RelayConfig{Broker: b})
	defer stop()
	all := got.WaitUntil(t, 30*time.Second, "the two small messages", func(r []received) bool { return len(r) >= 2 })
	if len(all) != 2 || all[0].value != "first" || all[1].value != "last" {
		t.Errorf("received %d messages, want first then last", len(all))
	}
	outboxEmpty(t, e)
	var id, cause string
	if err := e.pool.QueryRow(t.Context(), `SELECT id, error FROM `+e.table("redrive_outbox_parked")).Scan(&id, &cause); err != nil {
		t.Fatalf("the parked message: %v", err)
	}
	if id != big.ID || !strings.Contains(cause, "too large") {
		t.Errorf("parked %s (%s), want %s with the broker's error", id, cause, big.ID)
	}
	if n := e.counter(t, exactlyonce.MetricParked, nil); n != 1 {
		t.Errorf("parked counted %v, want 1", n)
	}
}
