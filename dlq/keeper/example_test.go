package keeper_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
)

// oneDeadLetter is a dlq.Source holding one dead letter, as a backend's
// Broker would read it from its DLQ.
type oneDeadLetter struct{ dl dlq.DeadLetter }

func (s oneDeadLetter) ConsumeDeadLetters(ctx context.Context, _ []string, handle func(context.Context, dlq.DeadLetter) error) error {
	if err := handle(ctx, s.dl); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// The keeper stores a dead letter once, then the application's hook runs,
// then the backend may acknowledge it. A program normally gives it its
// broker (worker.Load, or a backend's New) as the Source.
func ExampleNew() {
	quiet := slog.New(slog.DiscardHandler)
	store := memstore.New(memstore.Config{Logger: quiet})
	defer store.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	src := oneDeadLetter{dlq.DeadLetter{DLQ: "payouts.payout-executor.dlq", ID: "0-42", Identity: "0-42@1",
		Entry: dlq.Entry{OriginalTopic: "payouts", OriginalValue: []byte(`{"id":7}`), ErrorClass: "permanent",
			ErrorMessage: "bank rejected the transfer", Reason: "permanent"}}}
	k, err := keeper.New(keeper.Config{Source: src, Store: store, Broker: "kafka", Logger: quiet,
		DLQs: map[string]broker.Severity{"payouts.payout-executor.dlq": broker.SeverityCritical},
		Hook: dlq.HookFunc(func(ctx context.Context, r dlq.Record) error {
			fmt.Printf("stored %s/%s (%s): %s\n", r.DLQ, r.ID, r.Status, r.Entry.ErrorMessage)
			cancel() // one is enough for the example
			return nil
		})})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := k.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output: stored payouts.payout-executor.dlq/0-42 (pending): bank rejected the transfer
}
