package operate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// Example is the dead letter's journey: a handler fails for good, the
// backend dead-letters the message, the Keeper stores it, and Ops.Replay
// sends it back to the worker, which now succeeds. The broker is Kafka on
// an in-process kfake cluster; the store is the embedded one.
func Example() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	b, err := kafka.New(ctx, kafka.Config{Brokers: cluster.ListenAddrs(), Partitions: 1,
		FetchMaxWait: 100 * time.Millisecond, CommitInterval: 100 * time.Millisecond, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	// The worker: the first attempt is refused for good, the replay succeeds.
	sub := broker.Subscription{Topic: "payouts", Group: "payout-executor"}
	if err := b.Declare(ctx, sub); err != nil {
		fmt.Println(err)
		return
	}
	handled := make(chan string, 2)
	var attempts atomic.Int32
	go func() {
		_ = b.Consume(ctx, sub, func(ctx context.Context, d *broker.Delivery) error {
			if attempts.Add(1) == 1 {
				return broker.Permanent(errors.New("bank rejected the transfer"))
			}
			handled <- string(d.Value)
			return nil
		})
	}()

	// The keeper stores what reaches the DLQ, then acknowledges it.
	store := memstore.New(memstore.Config{Logger: quiet})
	defer store.Close()
	route := kafka.Route(sub.Topic, sub.Group) // the DLQ "payouts.dlq" and where it replays to
	kept := make(chan dlq.Record, 1)
	keeper, err := keeper.New(keeper.Config{Source: b, Store: store, Broker: kafka.Name,
		DLQs: map[string]broker.Severity{route.DLQ: broker.SeverityWarning}, Logger: quiet,
		Hook: dlq.HookFunc(func(ctx context.Context, r dlq.Record) error { kept <- r; return nil })})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = keeper.Run(ctx) }()

	if err := b.Publish(ctx, sub.Topic, broker.Message{Value: []byte("deal-42")}); err != nil {
		fmt.Println(err)
		return
	}
	r := <-kept
	fmt.Printf("kept in %s: %s (%s)\n", r.DLQ, r.Entry.ErrorMessage, r.Entry.Reason)

	// Replay: the entry goes back to its worker, by its configured route.
	ops, err := operate.New(operate.Config{Store: store, Republisher: b, Routes: []dlq.Route{route}, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	replayed, err := ops.Replay(ctx, r.DLQ, r.ID, "alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("entry", replayed.Status, "by", replayed.StatusBy)
	fmt.Println("handled", <-handled)
	// Output:
	// kept in payouts.dlq: bank rejected the transfer (permanent)
	// entry replayed by alice
	// handled deal-42
}
