package lag_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/lag"
)

// ExampleSampler measures the depth of a worker's queues on RabbitMQ
// (RABBITMQ_URL, default the local guest account): three messages wait in
// the group queue, none in its DLQ. The exporter runs a Sampler on an
// interval (Run) and serves the last sample; here one Sample is taken.
func ExampleSampler() {
	url := os.Getenv("RABBITMQ_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	// A worker's topology with three messages waiting (no consumer).
	prefix := "example-" + broker.NewMessageID()[:8]
	b, err := rabbit.New(ctx, rabbit.Config{URL: url, Prefix: prefix, Logger: quiet})
	if err != nil {
		fmt.Println("RabbitMQ is required:", err)
		return
	}
	defer b.Close()
	topic := "example.payouts." + broker.NewMessageID()[:8]
	sub := broker.Subscription{Topic: topic, Group: "payout-executor"}
	defer b.Teardown(context.Background(), sub)
	if err := b.Declare(ctx, sub); err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := b.Publish(ctx, topic, broker.Message{Value: []byte(v)}); err != nil {
			fmt.Println(err)
			return
		}
	}

	// The backend measures itself: RabbitMQ's monitor reads the depth of
	// the worker's group queue and DLQ.
	q := rabbit.Queue(sub.Topic, sub.Group)
	depth, err := rabbit.NewDepthMonitor(rabbit.DepthConfig{URL: url, Logger: quiet, Queues: []rabbit.MeasuredQueue{
		{Name: q, Role: lag.RoleGroup, Topic: sub.Topic, Group: sub.Group},
		{Name: rabbit.DLQ(q), Role: lag.RoleDLQ, Topic: sub.Topic, Group: sub.Group},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer depth.Close()
	s, err := lag.NewSampler(lag.SamplerConfig{Monitor: depth, Source: rabbit.Name, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Sample(ctx); err != nil {
		fmt.Println(err)
		return
	}
	depths, _, err := s.LastDepths()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range depths {
		fmt.Println(d.Queue == q, d.Messages, d.Consumers)
	}
	// Output:
	// true 3 0
	// false 0 0
}
