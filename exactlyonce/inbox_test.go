package exactlyonce_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// errAckLost makes the backend retry a delivery the inbox committed: what
// a worker killed between its commit and its acknowledgement, or a lost
// acknowledgement, does.
var errAckLost = errors.New("test: the acknowledgement was lost")

// TestInboxOnce runs an inbox worker on each broker over messages from
// redrive's publisher and from the raw clients (with an id, without one,
// with no key or value), each delivered again after its commit (the
// acknowledgement "lost"), and one whose first attempt fails after its
// effect: every message's effect is applied exactly once, every
// redelivery is counted as a duplicate, and the failed attempt's effect
// was rolled back.
func TestInboxOnce(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			tp := topic(t)
			sub := be.sub(tp, "payer")
			b := be.open(t, sub)
			in, err := e.store.Inbox(exactlyonce.InboxConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			committed := map[string]bool{} // keys whose ack was "lost" once already
			var deliveries calls
			h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
				if err := e.apply(ctx, tx, d.Group, string(d.Value), string(d.Value)); err != nil {
					return err
				}
				if string(d.Value) == "fails-once" && d.Attempt == 1 {
					return errors.New("downstream refused") // the effect above is rolled back
				}
				return nil
			})
			stop := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
				deliveries.Add(string(d.Value))
				err := h(ctx, d)
				mu.Lock()
				defer mu.Unlock()
				if err == nil && !committed[string(d.Value)] {
					committed[string(d.Value)] = true
					return errAckLost
				}
				return err
			})
			defer stop()

			if err := b.Publish(t.Context(), tp, broker.Message{Value: []byte("redrive")}, broker.Message{Value: []byte("fails-once")}); err != nil {
				t.Fatal(err)
			}
			rawPublish(t, be, tp, "raw-id-1", []byte("k"), []byte("raw with id"))
			rawPublish(t, be, tp, "", []byte("k"), []byte("raw without id"))
			rawPublish(t, be, tp, "", nil, nil) // no id, no key, no value (Kafka: null key and value)
			values := []string{"redrive", "fails-once", "raw with id", "raw without id", ""}
			// Each is delivered twice (its ack lost once); fails-once three
			// times (its failure, its success, its lost ack).
			got := deliveries.WaitUntil(t, time.Minute, "every message delivered after its lost ack", func(c []string) bool {
				n := map[string]int{}
				for _, v := range c {
					n[v]++
				}
				for _, v := range values {
					if n[v] < 2 || v == "fails-once" && n[v] < 3 {
						return false
					}
				}
				return true
			})
			stop()
			effects := e.effects(t)
			for _, v := range values {
				if effects[v] != 1 {
					t.Errorf("message %q: effect applied %d times, want 1 (effects %s, deliveries %v)", v, effects[v], fmtCounts(effects), got)
				}
			}
			if len(effects) != len(values) {
				t.Errorf("effects of %d messages, want %d: %s", len(effects), len(values), fmtCounts(effects))
			}
			if dups := e.counter(t, exactlyonce.MetricInboxDuplicates, map[string]string{"worker": "payer"}); dups != float64(len(values)) {
				t.Errorf("duplicates counted %v, want %d (one redelivery of each message)", dups, len(values))
			}
			if n := e.counter(t, exactlyonce.MetricInboxHandled, map[string]string{"worker": "payer"}); n != float64(len(values)) {
				t.Errorf("handled counted %v, want %d", n, len(values))
			}
		})
	}
}

// TestInboxForeignIDs publishes with the raw clients: two messages that
// reuse one id, and (RabbitMQ) two identical messages without an id. The
// default key (Delivery.StableID) treats each pair as one message, which
// docs/exactly-once.md says; a worker whose producer reuses ids keys on
// something else (here the payload) and handles both.
func TestInboxForeignIDs(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			tp := topic(t)
			byID, byValue := be.sub(tp, "by-id"), be.sub(tp, "by-value")
			b := be.open(t, byID, byValue)
			run := func(sub broker.Subscription, cfg exactlyonce.InboxConfig, seen *calls) func() {
				in, err := e.store.Inbox(cfg)
				if err != nil {
					t.Fatal(err)
				}
				h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
					return e.apply(ctx, tx, d.Group, d.Group+"/"+string(d.Value), string(d.Value))
				})
				return testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
					defer seen.Add(string(d.Value))
					return h(ctx, d)
				})
			}
			var seenID, seenValue calls
			defer run(byID, exactlyonce.InboxConfig{}, &seenID)()
			defer run(byValue, exactlyonce.InboxConfig{Key: func(d *broker.Delivery) string { return string(d.Value) }}, &seenValue)()

			rawPublish(t, be, tp, "reused", nil, []byte("first"))
			rawPublish(t, be, tp, "reused", nil, []byte("second"))
			rawPublish(t, be, tp, "", nil, []byte("same"))
			rawPublish(t, be, tp, "", nil, []byte("same"))
			waitCalls(t, &seenID, 4, "by-id: four deliveries")
			waitCalls(t, &seenValue, 4, "by-value: four deliveries")
			effects := e.effects(t)
			// By id: "second" reuses first's id; on RabbitMQ the second
			// "same" has the first's content, so its derived id.
			want := map[string]int{"by-id/first": 1, "by-id/same": 2, "by-value/first": 1, "by-value/second": 1, "by-value/same": 1}
			if be.name == "rabbitmq" {
				want["by-id/same"] = 1
			}
			for k, n := range want {
				if effects[k] != n {
					t.Errorf("%s: %d effects, want %d (all: %s)", k, effects[k], n, fmtCounts(effects))
				}
			}
			if effects["by-id/second"] != 0 {
				t.Errorf("by-id handled the message that reused an id: %s", fmtCounts(effects))
			}
		})
	}
}

// TestInboxConcurrentDeliveries delivers one message to twenty handlers
// at once (a redelivery while the first delivery still runs, as after a
// lost connection): the effect is applied once, the other nineteen are
// duplicates; then a delivery whose handler fails lets the next one run.
func TestInboxConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	in, err := e.store.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		<-release // every delivery has started before the first commits
		return e.apply(ctx, tx, d.Group, d.ID, "")
	})
	d := &broker.Delivery{Message: broker.Message{ID: "m-1"}, Group: "g", Partition: -1, Offset: -1}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() { errs <- h(t.Context(), &broker.Delivery{Message: d.Message, Group: d.Group, Partition: -1}) })
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("delivery: %v", err)
		}
	}
	if n := e.effects(t)["m-1"]; n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
	if dups := e.counter(t, exactlyonce.MetricInboxDuplicates, map[string]string{"worker": "g"}); dups != 19 {
		t.Errorf("duplicates %v, want 19", dups)
	}

	// A handler error and a panic roll the record back with the effect.
	fail := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		if err := e.apply(ctx, tx, d.Group, d.ID, ""); err != nil {
			return err
		}
		if d.Attempt == 1 {
			return broker.Permanent(errors.New("refused"))
		}
		if d.Attempt == 2 {
			panic("handler bug")
		}
		return nil
	})
	m2 := broker.Message{ID: "m-2"}
	if err := fail(t.Context(), &broker.Delivery{Message: m2, Group: "g", Attempt: 1, Partition: -1}); !broker.IsPermanent(err) {
		t.Fatalf("first attempt: %v, want the handler's permanent error", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handler's panic did not reach the caller (the pipeline recovers it)")
			}
		}()
		_ = fail(t.Context(), &broker.Delivery{Message: m2, Group: "g", Attempt: 2, Partition: -1})
	}()
	if n := e.effects(t)["m-2"]; n != 0 {
		t.Fatalf("after an error and a panic the effect is there %d times, want 0 (rolled back)", n)
	}
	if err := fail(t.Context(), &broker.Delivery{Message: m2, Group: "g", Attempt: 3, Partition: -1}); err != nil {
		t.Fatal(err)
	}
	if n := e.effects(t)["m-2"]; n != 1 {
		t.Errorf("after the successful attempt the effect is there %d times, want 1", n)
	}
}

// TestInboxAcrossDays: a message handled one day is a duplicate the next
// (another partition), also when two deliveries of it run at once on
// either side of midnight (two processes whose clocks say different
// days); after the retention its record is gone and it runs again.
func TestInboxAcrossDays(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2031, 3, 1, 23, 59, 59, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t2 time.Time) { mu.Lock(); now = t2; mu.Unlock() }
	e := newEnv(t, func(c *exactlyonce.Config) { c.Now = clock; c.InboxRetention = 2 * 24 * time.Hour })
	in, err := e.store.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		return e.apply(ctx, tx, d.Group, d.ID, "")
	})
	deliver := func(h broker.Handler, id string) {
		t.Helper()
		if err := h(t.Context(), &broker.Delivery{Message: broker.Message{ID: id}, Group: "g", Partition: -1}); err != nil {
			t.Fatal(err)
		}
	}
	deliver(h, "before-midnight")
	set(now.Add(2 * time.Second)) // the next day, whose partition Migrate created
	deliver(h, "before-midnight")
	if n := e.effects(t)["before-midnight"]; n != 1 {
		t.Fatalf("handled %d times across midnight, want 1", n)
	}

	// Two stores of one schema, one still on the 1st, one on the 2nd,
	// take one message at once: the lock on the key orders them.
	other, err := exactlyonce.New(exactlyonce.Config{Pool: e.pool, Schema: e.schema, Logger: quiet,
		Now: func() time.Time { return time.Date(2031, 3, 1, 23, 59, 59, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Maintain(t.Context()); err != nil { // loads its partitions
		t.Fatal(err)
	}
	otherIn, err := other.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	slow := func(in *exactlyonce.Inbox) broker.Handler {
		return in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
			<-release
			return e.apply(ctx, tx, d.Group, d.ID, "")
		})
	}
	var wg sync.WaitGroup
	for _, x := range []*exactlyonce.Inbox{in, otherIn} {
		wg.Go(func() { deliver(slow(x), "at-midnight") })
	}
	close(release)
	wg.Wait()
	if n := e.effects(t)["at-midnight"]; n != 1 {
		t.Errorf("two deliveries on either side of midnight applied %d effects, want 1", n)
	}

	// Past the retention (two days) the day's partition is dropped: the
	// message is no longer known.
	set(now.Add(4 * 24 * time.Hour))
	if err := e.store.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	var parts []string
	rows, err := e.pool.Query(t.Context(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1) ORDER BY 1`, e.table("redrive_inbox"))
	if err != nil {
		t.Fatal(err)
	}
	if parts, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf("redrive_inbox_d%d", time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC).Unix()/86400)
	for _, p := range parts {
		if p == first {
			t.Errorf("the partition of a day past the retention is still there: %v", parts)
		}
	}
	deliver(h, "before-midnight")
	if n := e.effects(t)["before-midnight"]; n != 2 {
		t.Errorf("after the retention the message was handled %d times in all, want 2 (the inbox forgot it)", n)
	}
}

// TestInboxReleasesConnections: whatever a delivery ends in (handled, a
// duplicate, the handler's error, its panic, a context ended before the
// BEGIN went out), its pool connection is back in the pool: the BEGIN
// travels in one batch with the claim, and the transaction the batch
// opened owns the connection until it commits or rolls back.
func TestInboxReleasesConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// A pool of its own, not closed by a cleanup: pgxpool's Close waits
	// for every connection acquired, so a leak would hang the test
	// instead of failing it.
	pc, err := pgxpool.ParseConfig(testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatal(err)
	}
	app := "redrive-test-" + e.schema
	pc.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(t.Context(), pc)
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	st, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: e.schema, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	in, err := st.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		if err := e.apply(ctx, tx, d.Group, d.ID, ""); err != nil {
			return err
		}
		switch d.Attempt {
		case 1:
			return errors.New("refused")
		case 2:
			panic("handler bug")
		}
		return nil
	})
	deliver := func(ctx context.Context, id string, attempt int) error {
		return h(ctx, &broker.Delivery{Message: broker.Message{ID: id}, Group: "g", Attempt: attempt, Partition: -1})
	}
	if err := deliver(t.Context(), "m", 0); err != nil {
		t.Fatal(err)
	}
	if err := deliver(t.Context(), "m", 0); err != nil { // a duplicate
		t.Fatal(err)
	}
	if err := deliver(t.Context(), "e", 1); err == nil {
		t.Fatal("the handler's error was not returned")
	}
	func() {
		defer func() { _ = recover() }()
		_ = deliver(t.Context(), "p", 2)
		t.Error("the handler's panic did not reach the caller")
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := deliver(ctx, "c", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a delivery with its context ended: %v, want context.Canceled", err)
	}
	if n := pool.Stat().AcquiredConns(); n != 0 {
		// End their sessions, so that the schema can be dropped.
		e.exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
		t.Fatalf("%d pool connections still acquired, want 0", n)
	}
	pool.Close()
	if got := e.effects(t); got["m"] != 1 || got["e"] != 0 || got["p"] != 0 || got["c"] != 0 {
		t.Errorf("effects %s, want m once and no other", fmtCounts(got))
	}
}
