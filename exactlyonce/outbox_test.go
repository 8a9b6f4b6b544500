package exactlyonce_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// received is a message as a raw consumer saw it.
type received struct {
	id, key, value string
}

// rawConsume reads topic with the backend's raw client (amqp091-go on
// the queue of group, which b declared; franz-go on the topic, from its
// start) until t ends, recording what arrives.
func rawConsume(t *testing.T, be backend, topic, group string) *testenv.Recorder[received] {
	t.Helper()
	rec := &testenv.Recorder[received]{}
	switch be.name {
	case "rabbitmq":
		ch := testenv.AMQP(t)
		msgs, err := ch.Consume(rabbit.Queue(topic, group), "", true, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for m := range msgs {
				k, _ := m.Headers[driver.HeaderKey].(string)
				rec.Add(received{id: m.MessageId, key: k, value: string(m.Body)})
			}
		}()
	default:
		brokers, _ := kafkaClusters.Load(t)
		cl := rawKafka(t, brokers.([]string), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(100*time.Millisecond))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		t.Cleanup(func() { cancel(); <-done })
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					var id string
					for _, h := range r.Headers {
						if h.Key == driver.HeaderMessageID {
							id = string(h.Value)
						}
					}
					rec.Add(received{id: id, key: string(r.Key), value: string(r.Value)})
				})
			}
		}()
	}
	return rec
}

// runRelay runs a relay of s on b until the returned stop is called (or t
// ends).
func runRelay(t *testing.T, s *exactlyonce.Store, cfg exactlyonce.RelayConfig) (*exactlyonce.Relay, func()) {
	t.Helper()
	r, err := s.NewRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, testenv.Background(t, "relay", 30*time.Second, r.Run)
}

// publishTx runs Publish in a transaction of its own and commits it
// (rollback instead when rollback is set).
func publishTx(t testing.TB, e *env, topic string, rollback bool, msgs ...broker.Message) {
	t.Helper()
	tx, err := e.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := e.store.Publish(context.Background(), tx, topic, msgs...); err != nil {
		t.Fatal(err)
	}
	if !rollback {
		if err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOutboxCommittedOnly: a raw consumer sees the message of a committed
// transaction, with the id it was given when written, and nothing of a
// rolled-back one.
func TestOutboxCommittedOnly(t *testing.T) {
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			tp := topic(t)
			b := be.open(t, be.sub(tp, "raw"))
			got := rawConsume(t, be, tp, "raw")
			_, stop := runRelay(t, e.store, exactlyonce.RelayConfig{Broker: b})
			defer stop()

			publishTx(t, e, tp, true, broker.Message{Key: []byte("k"), Value: []byte("rolled back")})
			committed := []broker.Message{{Key: []byte("k"), Value: []byte("committed"), Headers: map[string]string{"h": "v\x00w"}}}
			publishTx(t, e, tp, false, committed...)
			if committed[0].ID == "" {
				t.Fatal("Publish did not give the message its id")
			}
			publishTx(t, e, tp, true, broker.Message{Key: []byte("k"), Value: []byte("rolled back too")})
			publishTx(t, e, tp, false, broker.Message{Key: []byte("k"), Value: []byte("sentinel")})
			// One key, so one order: what came before the sentinel is all
			// there is.
			all := got.WaitUntil(t, 30*time.Second, "the sentinel", func(r []received) bool {
				return slices.ContainsFunc(r, func(x received) bool { return x.value == "sentinel" })
			})
			if len(all) != 2 || all[0].value != "committed" || all[0].id != committed[0].ID || all[0].key != "k" {
				t.Errorf("the raw consumer got %+v, want the committed message (id %s) then the sentinel", all, committed[0].ID)
			}
		})
	}
}

// flaky publishes through the broker, and reports the first n calls as
// failed after they went through (a confirm lost, a relay that crashed
// after publishing and before recording it).
type flaky struct {
	broker.Broker
	n atomic.Int32
}

func (f *flaky) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	if err := f.Broker.Publish(ctx, topic, msgs...); err != nil {
		return err
	}
	if f.n.Add(-1) >= 0 {
		return errors.New("test: the confirm was lost")
	}
	return nil
}

// TestRelayPublishesAgainWithTheSameID: a publish whose outcome the relay
// does not learn is published again, with the id fixed at write time: the
// receiver's inbox applies its effect once and counts the duplicate.
func TestRelayPublishesAgainWithTheSameID(t *testing.T) {
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			tp := topic(t)
			sub := be.sub(tp, "receiver")
			b := be.open(t, sub)
			in, err := e.store.Inbox(exactlyonce.InboxConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var deliveries calls
			h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
				return e.apply(ctx, tx, d.Group, string(d.Value), d.ID)
			})
			stopConsume := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
				deliveries.Add(d.ID)
				return h(ctx, d)
			})
			defer stopConsume()
			f := &flaky{Broker: b}
			f.n.Store(1)
			_, stop := runRelay(t, e.store, exactlyonce.RelayConfig{Broker: f})
			defer stop()
			msgs := []broker.Message{{Value: []byte("pay 1")}, {Value: []byte("pay 2")}}
			publishTx(t, e, tp, false, msgs...)
			got := waitCalls(t, &deliveries, 4, "both messages delivered twice")
			stopConsume()
			for _, m := range msgs {
				if n := strings.Count(strings.Join(got, " "), m.ID); n != 2 {
					t.Errorf("message %s delivered %d times with its id, want 2 (deliveries %v)", m.ID, n, got)
				}
			}
			if eff := e.effects(t); eff["pay 1"] != 1 || eff["pay 2"] != 1 {
				t.Errorf("effects %s, want each once", fmtCounts(eff))
			}
			if n := e.counter(t, exactlyonce.MetricPublishErrors, nil); n < 1 {
				t.Errorf("publish errors %v, want at least 1", n)
			}
		})
	}
}

// TestRelayOrder: messages of eight keys, each written in a transaction of
// its own, published by three relays of which one stops half-way and
// another starts later: each key's messages arrive in the order written,
// none missing. While three run, they share the shards fairly.
func TestRelayOrder(t *testing.T) {
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			tp := topic(t)
			b := be.open(t, be.sub(tp, "raw"))
			got := rawConsume(t, be, tp, "raw")
			cfg := exactlyonce.RelayConfig{Broker: b, Batch: 16, RebalanceInterval: 50 * time.Millisecond}
			r1, stop1 := runRelay(t, e.store, cfg)
			defer stop1()
			r2, stop2 := runRelay(t, e.store, cfg)
			r3, stop3 := runRelay(t, e.store, cfg)
			defer stop3()
			relays := []*exactlyonce.Relay{r1, r2, r3}
			testenv.Eventually(t, 30*time.Second, "three relays sharing the shards", func() bool {
				sum := 0
				for _, r := range relays {
					if r.Shards() > (exactlyonce.Shards+2)/3 {
						return false
					}
					sum += r.Shards()
				}
				return sum == exactlyonce.Shards
			})

			const keys, per = 8, 40
			var wg sync.WaitGroup
			var written atomic.Int32
			for k := range keys {
				wg.Go(func() {
					for i := range per {
						publishTx(t, e, tp, false, broker.Message{Key: []byte("key-" + strconv.Itoa(k)), Value: []byte(strconv.Itoa(i))})
						written.Add(1)
					}
				})
			}
			var r4stop func()
			testenv.Eventually(t, 30*time.Second, "a third written", func() bool { return written.Load() >= keys*per/3 })
			stop2()
			testenv.Eventually(t, 30*time.Second, "two thirds written", func() bool { return written.Load() >= 2*keys*per/3 })
			_, r4stop = runRelay(t, e.store, cfg)
			defer r4stop()
			wg.Wait()
			all := got.WaitUntil(t, time.Minute, "every message", func(r []received) bool {
				distinct := map[string]bool{}
				for _, x := range r {
					distinct[x.key+"/"+x.value] = true
				}
				return len(distinct) == keys*per
			})
			next := map[string]int{}
			for _, x := range all {
				n, _ := strconv.Atoi(x.value)
				switch {
				case n == next[x.key]:
					next[x.key]++
				case n < next[x.key]: // published again (a relay stopped mid-round): a duplicate, never out of order
				default:
					t.Errorf("key %s: message %d arrived before %d", x.key, n, next[x.key])
				}
			}
			t.Logf("%d messages received for %d written", len(all), keys*per)
			// A relay counts a message once its publish is confirmed, which
			// may come after the consumer has it: wait for the count.
			testenv.Eventually(t, 30*time.Second, "every publish counted", func() bool {
				return e.counter(t, exactlyonce.MetricPublished, nil) >= keys*per
			})
		})
	}
}

// TestOutboxKeyLock: a transaction writing a key another open transaction
// wrote waits (on the key's advisory lock) until the first commits, so
// that the relay's order of a key is its commit order; another key does
// not wait.
func TestOutboxKeyLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	tx1, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx1.Rollback(ctx) }()
	if err := e.store.Publish(ctx, tx1, "orders", broker.Message{Key: []byte("deal-1"), Value: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	publishTx(t, e, "orders", false, broker.Message{Key: []byte("deal-2"), Value: []byte("other key")})
	publishTx(t, e, "orders", false, broker.Message{Value: []byte("no key")})

	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		tx2, err := conn.Begin(ctx)
		if err == nil {
			if err = e.store.Publish(ctx, tx2, "orders", broker.Message{Key: []byte("deal-1"), Value: []byte("second")}); err == nil {
				err = tx2.Commit(ctx)
			}
		}
		done <- err
	}()
	testenv.Eventually(t, 30*time.Second, "the second writer waiting on the key's lock", func() bool {
		var waiting bool
		_ = e.pool.QueryRow(ctx, `SELECT coalesce(bool_or(wait_event_type = 'Lock' AND wait_event = 'advisory'), false)
			FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting)
		return waiting
	})
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rows, err := e.pool.Query(ctx, `SELECT convert_from(value, 'UTF8') FROM `+e.table("redrive_outbox")+` WHERE key = 'deal-1' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	order, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(order) != "[first second]" {
		t.Errorf("deal-1's messages in relay order %v, want [first second] (commit order)", order)
	}
}

// TestRelayWakesOnCommit: with polling every hour, a committed message is
// published at once: LISTEN/NOTIFY woke the relay.
func TestRelayWakesOnCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	be := backends[1] // Kafka
	tp := topic(t)
	b := be.open(t, be.sub(tp, "raw"))
	got := rawConsume(t, be, tp, "raw")
	r, stop := runRelay(t, e.store, exactlyonce.RelayConfig{Broker: b, PollInterval: time.Hour, RebalanceInterval: time.Hour})
	defer stop()
	testenv.Eventually(t, 30*time.Second, "the relay owning every shard", func() bool { return r.Shards() == exactlyonce.Shards })
	for i := range 3 {
		publishTx(t, e, tp, false, broker.Message{Value: []byte(strconv.Itoa(i))})
		got.WaitUntil(t, 30*time.Second, "the message published without a poll", func(r []received) bool { return len(r) == i+1 })
	}
}

// TestRelayHoldsARefusedTopic (RabbitMQ): a topic no queue is bound to is
// refused (unroutable); its message stays in the outbox, counted, while
// another topic's flow; once a worker declares its queue, it is published.
func TestRelayHoldsARefusedTopic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	be := backends[0]
	tp, later := topic(t), topic(t)
	b := be.open(t, be.sub(tp, "raw"))
	t.Cleanup(func() {
		testenv.DeleteQueues(rabbit.Queue(later, "raw"), rabbit.DLQ(rabbit.Queue(later, "raw")))
	})
	got := rawConsume(t, be, tp, "raw")
	_, stop := runRelay(t, e.store, exactlyonce.RelayConfig{Broker: b})
	defer stop()
	publishTx(t, e, later, false, broker.Message{Value: []byte("held")})
	publishTx(t, e, tp, false, broker.Message{Value: []byte("flows")})
	got.WaitUntil(t, 30*time.Second, "the other topic's message", func(r []received) bool { return len(r) == 1 })
	testenv.Eventually(t, 30*time.Second, "the refused publish counted", func() bool {
		return e.counter(t, exactlyonce.MetricPublishErrors, nil) >= 1
	})
	testenv.Eventually(t, 30*time.Second, "the published message deleted, the held one kept", func() bool {
		smp, err := e.store.Sample(t.Context())
		return err == nil && smp.Unsent == 1
	})
	if err := b.Declare(t.Context(), be.sub(later, "raw")); err != nil {
		t.Fatal(err)
	}
	held := rawConsume(t, be, later, "raw")
	held.WaitUntil(t, time.Minute, "the held message once its queue exists", func(r []received) bool { return len(r) == 1 })
	outboxEmpty(t, e)
}
