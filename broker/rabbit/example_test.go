package rabbit_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
)

// ExampleNew connects to RabbitMQ (RABBITMQ_URL, default the local
// guest account), declares the topology of a subscription (its group
// queue, dead-letter queue and delay tiers, under a prefix of the run's
// own), publishes a message and handles it; Teardown removes the topology.
func ExampleNew() {
	url := os.Getenv("RABBITMQ_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := rabbit.New(ctx, rabbit.Config{
		URL:    url,
		Prefix: "example-" + broker.NewMessageID()[:8],
		Delay:  rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println("RabbitMQ is required:", err)
		return
	}
	defer b.Close()
	topic := "example.orders." + broker.NewMessageID()[:8]
	sub := broker.Subscription{Topic: topic, Group: "billing"}
	defer b.Teardown(context.Background(), sub)
	if err := b.Declare(ctx, sub); err != nil {
		fmt.Println(err)
		return
	}
	if err := b.Publish(ctx, topic, broker.Message{Value: []byte("42.00")}); err != nil { // confirmed by the broker
		fmt.Println(err)
		return
	}
	handled := make(chan string, 1)
	consumeCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(consumeCtx, sub, func(ctx context.Context, d *broker.Delivery) error {
			handled <- string(d.Value)
			return nil // acknowledged; an error retries after the policy's back-off
		})
	}()
	fmt.Println("handled", <-handled)
	stop()
	fmt.Println("consumer stopped:", <-done)
	// Output:
	// handled 42.00
	// consumer stopped: <nil>
}
