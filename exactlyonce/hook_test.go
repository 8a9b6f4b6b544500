package exactlyonce_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestHookOncePerDeadLetter runs the keeper (embedded store) with the
// dead-letter hook as an inbox handler: a dead letter the keeper is handed
// twice (redelivered before its acknowledgement) marks its execution
// failed once; a database error of the hook rolls it back and makes the
// keeper leave the dead letter unacknowledged, and the next delivery
// marks it; a new dead letter is marked too.
func TestHookOncePerDeadLetter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.exec(t, `CREATE TABLE `+e.table("executions")+` (id text PRIMARY KEY, status text NOT NULL, failures int NOT NULL DEFAULT 0)`)
	e.exec(t, `INSERT INTO `+e.table("executions")+` (id, status) VALUES ('42', 'running'), ('43', 'running')`)
	in, err := e.store.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var failNext atomic.Bool
	hook := in.Hook(func(ctx context.Context, tx pgx.Tx, r dlq.Record) error {
		// Not idempotent on purpose: each run counts a failure.
		if _, err := tx.Exec(ctx, `UPDATE `+e.table("executions")+` SET status = 'failed', failures = failures + 1 WHERE id = $1`,
			string(r.Entry.OriginalKey)); err != nil {
			return err
		}
		if failNext.CompareAndSwap(true, false) {
			return errors.New("test: the database went away")
		}
		return nil
	})
	k, err := keeper.New(keeper.Config{Source: noSource{}, Store: memstore.New(memstore.Config{}), Broker: kafka.Name,
		DLQs: map[string]broker.Severity{"orders.dlq": broker.SeverityCritical}, Hook: hook, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dl := func(id, key string) dlq.DeadLetter {
		return dlq.DeadLetter{DLQ: "orders.dlq", ID: id, Identity: id + "@1",
			Entry: dlq.Entry{MessageID: "m-" + id, OriginalTopic: "orders", OriginalKey: []byte(key), OriginalValue: []byte("{}"),
				Reason: string(driver.ReasonMaxRetries), Worker: "payer", OriginalPartition: 0, OriginalOffset: 1}}
	}
	ctx := t.Context()
	if err := k.Handle(ctx, dl("0-1", "42")); err != nil {
		t.Fatal(err)
	}
	if err := k.Handle(ctx, dl("0-1", "42")); err != nil { // the same dead letter again
		t.Fatal(err)
	}
	failNext.Store(true)
	if err := k.Handle(ctx, dl("0-2", "43")); err == nil {
		t.Fatal("the hook's database error did not reach the keeper (it would acknowledge)")
	}
	if err := k.Handle(ctx, dl("0-2", "43")); err != nil {
		t.Fatal(err)
	}
	rows, err := e.pool.Query(ctx, `SELECT id, status, failures FROM `+e.table("executions")+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type execution struct {
		ID, Status string
		Failures   int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[execution])
	if err != nil {
		t.Fatal(err)
	}
	want := []execution{{"42", "failed", 1}, {"43", "failed", 1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("executions %+v, want %+v: each dead letter marked once", got, want)
	}
	if n := e.counter(t, exactlyonce.MetricInboxDuplicates, map[string]string{"worker": exactlyonce.DefaultHookName}); n != 1 {
		t.Errorf("hook duplicates %v, want 1", n)
	}
}

// noSource is a keeper's source that delivers nothing: the test hands the
// keeper its dead letters.
type noSource struct{}

func (noSource) ConsumeDeadLetters(ctx context.Context, _ []string, _ func(context.Context, dlq.DeadLetter) error) error {
	<-ctx.Done()
	return nil
}

// TestReplayOfAHandledMessage: a replay keeps the message's id, so the
// inbox takes the replay of a message it handled for a redelivery (no
// effect, counted as a duplicate), and runs the replay of one that failed.
func TestReplayOfAHandledMessage(t *testing.T) {
	routes := map[string]func(topic, group string) dlq.Route{"rabbitmq": rabbit.Route, "kafka": kafka.Route}
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			tp := topic(t)
			sub := be.sub(tp, "payer")
			sub.Policy.MaxRetries = 0
			b := be.open(t, sub)
			in, err := e.store.Inbox(exactlyonce.InboxConfig{})
			if err != nil {
				t.Fatal(err)
			}
			var deliveries calls
			h := in.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
				if string(d.Value) == "refused" && d.Header(broker.HeaderReplayedFrom) == "" {
					return broker.Permanent(errors.New("refused until replayed"))
				}
				return e.apply(ctx, tx, d.Group, string(d.Value), d.Header(broker.HeaderReplayedFrom))
			})
			stop := testenv.Consume(t, b, sub, func(ctx context.Context, d *broker.Delivery) error {
				defer deliveries.Add(string(d.Value) + "@" + d.Header(broker.HeaderReplayedFrom))
				return h(ctx, d)
			})
			defer stop()
			msgs := []broker.Message{{ID: broker.NewMessageID(), Value: []byte("handled")}, {ID: broker.NewMessageID(), Value: []byte("refused")}}
			if err := b.Publish(t.Context(), tp, msgs...); err != nil {
				t.Fatal(err)
			}
			waitCalls(t, &deliveries, 2, "both messages delivered")
			before := e.counter(t, exactlyonce.MetricInboxDuplicates, map[string]string{"worker": "payer"})
			rp := b.(dlq.Republisher)
			for i, m := range msgs {
				entry := dlq.Entry{MessageID: m.ID, OriginalTopic: tp, OriginalValue: m.Value, Worker: "payer",
					OriginalPartition: -1, OriginalOffset: -1, Reason: string(driver.ReasonPermanent)}
				if err := rp.Republish(t.Context(), entry, routes[be.name](tp, "payer"), "dlq/"+string(rune('a'+i))); err != nil {
					t.Fatal(err)
				}
			}
			waitCalls(t, &deliveries, 4, "both replays delivered")
			testenv.Eventually(t, 10*time.Second, "the replay of the handled message counted as a duplicate", func() bool {
				return e.counter(t, exactlyonce.MetricInboxDuplicates, map[string]string{"worker": "payer"}) == before+1
			})
			stop()
			if eff := e.effects(t); eff["handled"] != 1 || eff["refused"] != 1 {
				t.Errorf("effects %s, want handled once (its replay a duplicate) and refused once (its replay)", fmtCounts(eff))
			}
			if notes := e.notes(t); len(notes) != 2 || notes[0] != "" || notes[1] != "dlq/b" {
				t.Errorf("ledger notes %q, want the handled message's (not replayed) then the refused one's replay", notes)
			}
		})
	}
}
