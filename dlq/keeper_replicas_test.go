package dlq_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testenv"
)

// TestTwoKeepersStoreOnce: two keepers (two `redrive serve` replicas: a
// broker connection and a store pool each) consume one RabbitMQ DLQ into
// one PostgreSQL schema. Every dead letter arrives twice (a redelivery:
// the same message id, timestamp and headers), and 50 more are handed to
// both keepers at once; each is stored exactly once.
func TestTwoKeepersStoreOnce(t *testing.T) {
	ctx := context.Background()
	f := newRabbit(t)
	quiet := slog.New(slog.DiscardHandler)
	schema := testenv.Schema(t)
	var keepers []*dlq.Keeper
	var stores []*pgstore.Store
	var copies atomic.Int64 // dead letters offered to the stores
	for i := range 2 {
		s, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Options{Schema: schema, MaxConns: 4, Logger: quiet})
		if err != nil {
			testenv.PostgreSQL.Fail(t, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		b, err := rabbit.New(ctx, rabbit.Config{URL: testenv.RabbitMQ.URL(), Prefix: fmt.Sprintf("dt-keeper%d", i), Logger: quiet})
		if err != nil {
			testenv.RabbitMQ.Fail(t, err)
		}
		t.Cleanup(func() { _ = b.Close() })
		k, err := dlq.NewKeeper(dlq.KeeperConfig{Source: b, Store: offered{s, &copies}, Broker: broker.RabbitMQ,
			DLQs: map[string]broker.Severity{f.dlq: broker.SeverityWarning}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		keepers, stores = append(keepers, k), append(stores, s)
	}

	// 50 dead letters handed to both keepers at once.
	var wg sync.WaitGroup
	for i := range 50 {
		dl := dlq.DeadLetter{DLQ: f.dlq, Identity: fmt.Sprintf("both-%d", i), Entry: dlq.Entry{MessageID: fmt.Sprintf("both-%d", i),
			OriginalTopic: f.sub.Topic, OriginalPartition: -1, OriginalOffset: -1, OriginalValue: []byte("v"), Reason: "permanent"}}
		for _, k := range keepers {
			wg.Go(func() {
				if err := k.Handle(ctx, dl); err != nil {
					t.Errorf("Handle %s: %v", dl.Identity, err)
				}
			})
		}
	}
	wg.Wait()
	copies.Store(0)

	// 200 dead letters on the DLQ, each twice, consumed by both keepers.
	runCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	for _, k := range keepers {
		running.Go(func() {
			if err := k.Run(runCtx); err != nil {
				t.Errorf("keeper: %v", err)
			}
		})
	}
	at := time.Now().Truncate(time.Second)
	for i := range 200 {
		m := amqp.Publishing{MessageId: fmt.Sprintf("twice-%03d", i), Timestamp: at, Body: []byte("v"),
			Headers: amqp.Table{"x-redrive-reason": "permanent"}}
		for range 2 {
			if err := f.ch.PublishWithContext(ctx, "", f.dlq, false, false, m); err != nil {
				t.Fatalf("publish: %v", err)
			}
		}
	}
	// No event crosses the keepers: the store and the queue are read
	// until every copy is stored and acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := stores[0].Count(ctx, dlq.Query{DLQ: f.dlq})
		q, qerr := f.ch.QueueDeclarePassive(f.dlq, true, false, false, false, nil)
		if err == nil && qerr == nil && n >= 250 && q.Messages == 0 && copies.Load() >= 400 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d stored (%v), %d ready (%v), %d of 400 copies offered", n, err, q.Messages, qerr, copies.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	running.Wait()
	seen := map[string]int{}
	q := dlq.Query{DLQ: f.dlq, Limit: dlq.MaxLimit}
	for {
		page, err := stores[1].List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			seen[r.Entry.MessageID]++
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if len(seen) != 250 {
		t.Errorf("%d distinct dead letters stored, want 250", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
}

// offered counts the dead letters a keeper offers to its store.
type offered struct {
	dlq.Store
	n *atomic.Int64
}

// Insert implements dlq.Store.
func (o offered) Insert(ctx context.Context, r dlq.Record) (dlq.Record, bool, error) {
	got, inserted, err := o.Store.Insert(ctx, r)
	if err == nil {
		o.n.Add(1)
	}
	return got, inserted, err
}

// InsertBatch implements dlq.Store.
func (o offered) InsertBatch(ctx context.Context, rs []dlq.Record) ([]dlq.InsertResult, error) {
	res, err := o.Store.InsertBatch(ctx, rs)
	for _, r := range res {
		if err == nil && r.Err == nil {
			o.n.Add(1)
		}
	}
	return res, err
}
