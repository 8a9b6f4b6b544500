package keeper_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/rabbitfixture"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestTwoKeepersStoreOnce: two keepers (two `redrive serve` replicas: a
// broker connection and a store pool each) consume one DLQ into one
// PostgreSQL schema. 50 dead letters are handed to both keepers at once;
// then 200 wait in the DLQ: on RabbitMQ each twice (a redelivery: the same
// message id, timestamp and headers), on Kafka once, with the first keeper
// stopped halfway (what it read but did not commit is read again by the
// other). Each is stored exactly once.
func TestTwoKeepersStoreOnce(t *testing.T) {
	t.Run("rabbitmq", func(t *testing.T) {
		f := rabbitfixture.New(t)
		run := broker.NewMessageID()[:8]
		twoKeepers(t, rabbit.Name, f.DLQ, 400, func(i int) dlq.Source {
			// A prefix of its own, and its base topology deleted after.
			b, err := rabbit.New(t.Context(), rabbit.Config{URL: testenv.RabbitMQ.URL(), Prefix: fmt.Sprintf("dt-keeper%d-%s", i, run), Logger: quiet})
			if err != nil {
				testenv.RabbitMQ.Fail(t, err)
			}
			t.Cleanup(func() {
				if _, err := b.Teardown(context.Background()); err != nil {
					t.Errorf("teardown of keeper %d's topology: %v", i, err)
				}
				_ = b.Close()
			})
			return b
		}, func() {
			at := time.Now().Truncate(time.Second)
			for i := range 200 {
				m := amqp.Publishing{MessageId: fmt.Sprintf("dl-%03d", i), Timestamp: at, Body: []byte("v"),
					Headers: amqp.Table{"x-redrive-reason": "permanent"}}
				for range 2 {
					if err := f.Ch.PublishWithContext(t.Context(), "", f.DLQ, false, false, m); err != nil {
						t.Fatalf("publish: %v", err)
					}
				}
			}
		}, func() bool {
			q, err := f.Ch.QueueDeclarePassive(f.DLQ, true, false, false, false, nil)
			return err == nil && q.Messages == 0
		})
	})
	t.Run("kafka", func(t *testing.T) {
		brokers := kafkatest.Cluster(t)
		sub := broker.Subscription{Topic: "keepers." + broker.NewMessageID()[:8], Group: "g"}
		if err := kafkatest.New(t, brokers, nil).Declare(t.Context(), sub); err != nil {
			t.Fatal(err)
		}
		dlqTopic := kafka.DLQTopic(sub.Topic)
		twoKeepers(t, kafka.Name, dlqTopic, 200, func(int) dlq.Source { return kafkatest.New(t, brokers, nil) }, func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			recs := make([]*kgo.Record, 200)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: dlqTopic, Key: fmt.Appendf(nil, "dl-%03d", i), Value: []byte("v")}
			}
			if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}, func() bool { return true })
	})
}

// twoKeepers runs the case on one broker: source(i) is keeper i's
// connection; feed puts the dead letters in the DLQ (copies in all), and
// drained says whether the DLQ holds none waiting.
func twoKeepers(t *testing.T, kind string, dlqName string, copies int64, source func(i int) dlq.Source, feed func(), drained func() bool) {
	ctx := context.Background()
	schema := testenv.Schema(t)
	var keepers []*keeper.Keeper
	var stores []*pgstore.Store
	var offers atomic.Int64 // dead letters offered to the stores
	for i := range 2 {
		s, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 4, Logger: quiet})
		if err != nil {
			testenv.PostgreSQL.Fail(t, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		k, err := keeper.New(keeper.Config{Source: source(i), Store: offered{s, &offers}, Broker: kind,
			DLQs: map[string]broker.Severity{dlqName: broker.SeverityWarning}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		keepers, stores = append(keepers, k), append(stores, s)
	}

	// 50 dead letters handed to both keepers at once.
	var wg sync.WaitGroup
	for i := range 50 {
		dl := dlq.DeadLetter{DLQ: dlqName, Identity: fmt.Sprintf("both-%d", i), Entry: dlq.Entry{MessageID: fmt.Sprintf("both-%d", i),
			OriginalTopic: "t", OriginalPartition: -1, OriginalOffset: -1, OriginalValue: []byte("v"), Reason: "permanent"}}
		for _, k := range keepers {
			wg.Go(func() {
				if err := k.Handle(ctx, dl); err != nil {
					t.Errorf("Handle %s: %v", dl.Identity, err)
				}
			})
		}
	}
	wg.Wait()
	offers.Store(0)

	// The DLQ's dead letters, consumed by both keepers; the first stops
	// halfway.
	var running sync.WaitGroup
	cancels := make([]context.CancelFunc, len(keepers))
	for i, k := range keepers {
		var runCtx context.Context
		runCtx, cancels[i] = context.WithCancel(ctx)
		running.Go(func() {
			if err := k.Run(runCtx); err != nil {
				t.Errorf("keeper %d: %v", i, err)
			}
		})
	}
	feed()
	// No event crosses the keepers: the store and the DLQ are read until
	// every copy was offered, stored and acknowledged.
	deadline := time.Now().Add(60 * time.Second)
	stopped := false
	for {
		n, err := stores[0].Count(ctx, dlq.Query{DLQ: dlqName})
		if !stopped && offers.Load() >= copies/2 {
			cancels[0]()
			stopped = true
		}
		if err == nil && n >= 250 && offers.Load() >= copies && drained() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d stored (%v), %d of %d copies offered", n, err, offers.Load(), copies)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, cancel := range cancels {
		cancel()
	}
	running.Wait()
	seen := map[string]int{}
	q := dlq.Query{DLQ: dlqName, Limit: dlq.MaxLimit}
	for {
		page, err := stores[1].List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			seen[r.Identity]++
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
	t.Logf("%d copies offered after the first 50", offers.Load())
}

var quiet = slog.New(slog.DiscardHandler)

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
