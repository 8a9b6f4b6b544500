package mem_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/retrypolicy"
)

// A handler tested on the in-memory broker: a payment that fails once is
// retried on the worker's one-hour schedule, which the test's clock
// advances instead of sleeping; one the bank refuses for good is
// dead-lettered with its story.
func Example() {
	clock := mem.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	srv, err := mem.NewServer(mem.ServerConfig{Clock: clock})
	if err != nil {
		panic(err)
	}
	b := srv.Connect(mem.BrokerConfig{Logger: slog.New(slog.DiscardHandler)})

	// The application's handler, as its worker runs it.
	pay := func(ctx context.Context, d *broker.Delivery) error {
		switch {
		case string(d.Value) == "closed":
			return broker.Permanent(errors.New("account closed"))
		case d.Attempt == 1:
			return errors.New("bank timeout")
		}
		fmt.Printf("paid %s on attempt %d at %s\n", d.ID, d.Attempt, clock.Now().Format("15:04"))
		return nil
	}
	sub := broker.Subscription{Topic: "payments", Group: "payer", Policy: retrypolicy.Policy{
		MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{time.Hour}},
	}}

	ctx, cancel := context.WithCancel(context.Background())
	wait := b.Start(ctx, sub, pay) // counted by Idle from now on
	err = b.Publish(ctx, "payments",
		broker.Message{ID: "p-1", Value: []byte("open")},
		broker.Message{ID: "p-2", Value: []byte("closed")})
	if err != nil {
		panic(err)
	}
	if err := srv.Idle(ctx); err != nil { // p-1 failed once, p-2 is dead-lettered
		panic(err)
	}
	fmt.Printf("at 09:00: %+v\n", srv.Stats("payments", "payer"))
	clock.Advance(time.Hour) // p-1's back-off ends
	if err := srv.Idle(ctx); err != nil {
		panic(err)
	}
	for _, e := range srv.DeadLetters("payments", "payer") {
		fmt.Printf("dead letter %s: %s, %q after %d retries\n", e.MessageID, e.Reason, e.ErrorMessage, e.RetryCount)
	}
	cancel()
	if err := wait(); err != nil {
		panic(err)
	}
	// Output:
	// at 09:00: {Due:0 Delayed:1 InFlight:0 DeadLetters:1 Consumers:1 Readers:0}
	// paid p-1 on attempt 2 at 10:00
	// dead letter p-2: permanent, "account closed" after 0 retries
}

// Drain runs a retry schedule of days to its end in no time: it waits
// until the server is idle, advances the clock to the next back-off's
// end, and again, until nothing is left. Here a message another producer
// wrote (no id, no header) keeps failing until its retries are spent.
func ExampleServer_Drain() {
	clock := mem.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	srv, err := mem.NewServer(mem.ServerConfig{Clock: clock})
	if err != nil {
		panic(err)
	}
	b := srv.Connect(mem.BrokerConfig{Logger: slog.New(slog.DiscardHandler)})
	sub := broker.Subscription{Topic: "ledger", Group: "poster", Policy: retrypolicy.Policy{
		MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{time.Hour, 24 * time.Hour, 72 * time.Hour}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	wait := b.Start(ctx, sub, func(ctx context.Context, d *broker.Delivery) error {
		fmt.Printf("attempt %d at %s\n", d.Attempt, clock.Now().Format("Jan 2 15:04"))
		return errors.New("ledger closed")
	})
	if err := srv.Inject("ledger", nil, []byte("not json"), nil); err != nil {
		panic(err)
	}
	if err := srv.Drain(ctx); err != nil {
		panic(err)
	}
	for _, e := range srv.DeadLetters("ledger", "poster") {
		fmt.Printf("dead letter: %s after %d retries, %s to %s\n", e.Reason, e.RetryCount,
			e.FirstFailureAt.Format("Jan 2 15:04"), e.LastFailureAt.Format("Jan 2 15:04"))
	}
	cancel()
	if err := wait(); err != nil {
		panic(err)
	}
	// Output:
	// attempt 1 at Jan 1 00:00
	// attempt 2 at Jan 1 01:00
	// attempt 3 at Jan 2 01:00
	// attempt 4 at Jan 5 01:00
	// dead letter: max_retries after 3 retries, Jan 1 00:00 to Jan 5 01:00
}
