package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/worker"
)

// A worker program: its handlers, and a configuration that names the
// broker. Changing `broker: rabbitmq` to `broker: kafka` (with a kafka
// section) runs the same code on Kafka.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Names of this run's own (a prefix, a topic), so that runs side by
	// side never share a queue; removed at the end.
	run := broker.NewMessageID()[:8]
	yaml := `
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: example-` + run + `}
workers:
  - name: payout-executor
    topic: example.payouts.` + run + `
    retry: {max_retries: 3, backoff: "1s -> 5s -> 30s"}
`
	defer removeExample(yaml)
	rt, err := worker.Parse(ctx, []byte(yaml), worker.Config{NoSignals: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	paid := make(chan string)
	handlers := worker.Handlers{
		"payout-executor": func(ctx context.Context, d *broker.Delivery) error {
			paid <- string(d.Value)
			return nil
		},
	}
	done := make(chan error)
	go func() { done <- rt.Run(ctx, handlers) }()

	// Publish once the queues exist (Run declares them too).
	if err := rt.Broker().Declare(ctx, rt.Subscriptions()...); err != nil {
		fmt.Println(err)
		return
	}
	if err := rt.Broker().Publish(ctx, "example.payouts."+run, broker.Message{Value: []byte("deal-42")}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("paid", <-paid)
	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// paid deal-42
	// stopped: <nil>
}

// removeExample deletes what the example declared.
func removeExample(yaml string) {
	if c, err := config.Parse([]byte(yaml)); err == nil {
		removeTopology(c)
	}
}
