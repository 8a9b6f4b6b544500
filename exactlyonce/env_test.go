package exactlyonce_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// quiet is the components' logger in tests.
var quiet = slog.New(slog.DiscardHandler)

// env is one test's database: a pool, a schema of its own (dropped when
// the test ends) with the store's tables migrated and a ledger table of
// the effects handlers apply, and the store's registry.
type env struct {
	pool   *pgxpool.Pool
	schema string
	store  *exactlyonce.Store
	reg    *prometheus.Registry
}

// newEnv migrates a store in a schema of t's own; edit may change its
// configuration.
func newEnv(t testing.TB, edit func(*exactlyonce.Config)) *env {
	t.Helper()
	e := &env{pool: newPool(t), schema: testenv.Schema(t), reg: prometheus.NewPedanticRegistry()}
	cfg := exactlyonce.Config{Pool: e.pool, Schema: e.schema, Registerer: e.reg, Logger: quiet}
	if edit != nil {
		edit(&cfg)
	}
	s, err := exactlyonce.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	e.store = s
	e.exec(t, `CREATE TABLE `+e.table("ledger")+` (n bigserial PRIMARY KEY, worker text NOT NULL, key text NOT NULL, note text)`)
	return e
}

// newPool connects to the tests' PostgreSQL, closed when t ends.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	if err := pool.Ping(t.Context()); err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// table is name in the env's schema.
func (e *env) table(name string) string { return pgx.Identifier{e.schema, name}.Sanitize() }

func (e *env) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := e.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// apply is an effect: a ledger row for (worker, key) written in tx.
func (e *env) apply(ctx context.Context, tx pgx.Tx, worker, key, note string) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+e.table("ledger")+` (worker, key, note) VALUES ($1, $2, $3)`, worker, key, note)
	return err
}

// effects counts the ledger's rows by key.
func (e *env) effects(t testing.TB) map[string]int {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT key, count(*) FROM `+e.table("ledger")+` GROUP BY key`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// notes are the ledger's notes in the order written.
func (e *env) notes(t testing.TB) []string {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT note FROM `+e.table("ledger")+` ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// counter reads a counter of the env's registry (0 when absent).
func (e *env) counter(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := testenv.Value(testenv.Scrape(t, e.reg), name, labels)
	return v
}

// backend is a broker the tests run on.
type backend struct {
	name string
	// open connects a broker for subs (declared), closed and cleaned up
	// when t ends.
	open func(t *testing.T, subs ...broker.Subscription) broker.Broker
	// sub is a subscription of the backend's test shape.
	sub func(topic, group string) broker.Subscription
}

var backends = []backend{
	{name: "rabbitmq", open: openRabbit, sub: func(topic, group string) broker.Subscription {
		return broker.Subscription{Topic: topic, Group: group, Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{50 * time.Millisecond}}},
			ShutdownTimeout: 5 * time.Second}
	}},
	{name: "kafka", open: openKafka, sub: func(topic, group string) broker.Subscription {
		return broker.Subscription{Topic: topic, Group: group, Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{50 * time.Millisecond}}},
			ShutdownTimeout: 5 * time.Second}
	}},
	{name: "kafka-non-blocking", open: openKafka, sub: func(topic, group string) broker.Subscription {
		// Retries as copies on the retry topic, as on RabbitMQ.
		return broker.Subscription{Topic: topic, Group: group, RetryMode: broker.NonBlocking,
			Policy:          retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{50 * time.Millisecond}}},
			ShutdownTimeout: 5 * time.Second}
	}},
}

// rabbitPrefixes are the prefixes of the tests' RabbitMQ brokers, by
// test (for raw publishes to its topics exchange).
var rabbitPrefixes sync.Map // *testing.T → prefix

func openRabbit(t *testing.T, subs ...broker.Subscription) broker.Broker {
	t.Helper()
	prefix := "eo-" + broker.NewMessageID()[:8]
	b, err := rabbit.New(t.Context(), rabbit.Config{URL: testenv.RabbitMQ.URL(), Prefix: prefix,
		Delay: rabbit.DelayConfig{Resolution: 50 * time.Millisecond, Factor: 2, Levels: 3}, Logger: quiet})
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	rabbitPrefixes.Store(t, prefix)
	t.Cleanup(func() {
		_ = b.Close()
		testenv.DeleteTopology(b.Plan(subs...), func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
	})
	if err := b.Declare(t.Context(), subs...); err != nil {
		t.Fatal(err)
	}
	return b
}

// kafkaClusters are the kfake clusters of the tests, by test.
var kafkaClusters sync.Map // *testing.T → []string

func openKafka(t *testing.T, subs ...broker.Subscription) broker.Broker {
	t.Helper()
	brokers, ok := kafkaClusters.Load(t)
	if !ok {
		_, addrs := kafkatest.Fake(t)
		kafkaClusters.Store(t, addrs)
		brokers = addrs
	}
	b := kafkatest.New(t, brokers.([]string), func(c *kafka.Config) { c.Partitions = 3 })
	if err := b.Declare(t.Context(), subs...); err != nil {
		t.Fatal(err)
	}
	return b
}

// rawPublish publishes value to topic with the backend's raw client (no
// redrive headers; id = the AMQP message-id property or none on Kafka
// when empty, else the x-redrive-message-id header).
func rawPublish(t *testing.T, be backend, topic, id string, key, value []byte) {
	t.Helper()
	switch be.name {
	case "rabbitmq":
		prefix, _ := rabbitPrefixes.Load(t)
		ch := testenv.AMQP(t)
		if err := ch.Confirm(false); err != nil {
			t.Fatal(err)
		}
		conf, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), prefix.(string)+".topics", topic, false, false,
			amqp.Publishing{MessageId: id, Body: value, DeliveryMode: amqp.Persistent})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := conf.WaitContext(t.Context()); !ok || err != nil {
			t.Fatalf("raw publish not confirmed: %v %v", ok, err)
		}
	case "kafka", "kafka-non-blocking":
		brokers, _ := kafkaClusters.Load(t)
		cl := rawKafka(t, brokers.([]string))
		r := &kgo.Record{Topic: topic, Key: key, Value: value}
		if id != "" {
			r.Headers = []kgo.RecordHeader{{Key: driver.HeaderMessageID, Value: []byte(id)}}
		}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// rawKafka is a raw franz-go client of brokers, closed when t ends.
func rawKafka(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// calls counts handler calls and lets a test wait for them.
type calls = testenv.Recorder[string]

// waitCalls waits until rec has at least n calls.
func waitCalls(t testing.TB, rec *calls, n int, what string) []string {
	t.Helper()
	return rec.WaitUntil(t, 30*time.Second, what, func(c []string) bool { return len(c) >= n })
}

// topic is a topic name of t's own.
func topic(t testing.TB) string { return "eo." + testenv.Name(t) }

func fmtCounts(m map[string]int) string { return fmt.Sprint(m) }
