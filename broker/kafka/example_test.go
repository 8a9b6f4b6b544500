package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
)

// ExampleNew connects to Kafka (here an in-process kfake cluster; in
// production the seed brokers), creates the topics of a subscription,
// publishes a record and handles it.
func ExampleNew() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	b, err := kafka.New(ctx, kafka.Config{
		Brokers:      cluster.ListenAddrs(),
		Partitions:   1,
		FetchMaxWait: 100 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	sub := broker.Subscription{Topic: "orders", Group: "billing"}
	if err := b.Declare(ctx, sub); err != nil {
		fmt.Println(err)
		return
	}
	if err := b.Publish(ctx, "orders", broker.Message{Key: []byte("order-7"), Value: []byte("42.00")}); err != nil {
		fmt.Println(err)
		return
	}
	handled := make(chan string, 1)
	consumeCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(consumeCtx, sub, func(ctx context.Context, d *broker.Delivery) error {
			handled <- string(d.Key) + " " + string(d.Value)
			return nil
		})
	}()
	fmt.Println("handled", <-handled)
	stop()
	fmt.Println("consumer stopped:", <-done)
	// Output:
	// handled order-7 42.00
	// consumer stopped: <nil>
}

// Example_headersOnDemand consumes without building a Headers map per
// record: the handler reads headers with Delivery.Header, which works
// whether Headers is built or not.
func Example_headersOnDemand() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := kafka.New(ctx, kafka.Config{Brokers: cluster.ListenAddrs(), Partitions: 1,
		FetchMaxWait: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	sub := broker.Subscription{Topic: "orders", Group: "audit", HeadersOnDemand: true}
	if err := b.Declare(ctx, sub); err != nil {
		fmt.Println(err)
		return
	}
	msg := broker.Message{Value: []byte("42.00"), Headers: map[string]string{"tenant": "acme"}}
	if err := b.Publish(ctx, "orders", msg); err != nil {
		fmt.Println(err)
		return
	}
	handled := make(chan string, 1)
	consumeCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(consumeCtx, sub, func(ctx context.Context, d *broker.Delivery) error {
			handled <- fmt.Sprintf("tenant=%s map built=%v", d.Header("tenant"), d.Headers != nil)
			return nil
		})
	}()
	fmt.Println(<-handled)
	stop()
	<-done
	// Output:
	// tenant=acme map built=false
}
