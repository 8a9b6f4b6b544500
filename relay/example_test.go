package relay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit" // registers broker: rabbitmq
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/relay"
	"github.com/redrive/redrive/worker"
)

// A relay of one worker whose handler is an HTTP endpoint (here a Go
// one; any language does). The endpoint answers 200: the message is
// done. A 5xx would be retried on the worker's schedule, a 404 dead-lettered.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan string, 1)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- fmt.Sprintf("%s %s attempt %s: %s", r.Header.Get("ce-type"), r.Header.Get("redrive-worker"),
			r.Header.Get("redrive-attempt"), body)
	}))
	defer endpoint.Close()

	// Names of this run's own, removed at the end.
	run := broker.NewMessageID()[:8]
	yaml := `
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: relay-example-` + run + `}
workers:
  - name: payout-executor
    topic: example.payouts.` + run + `
    retry: {max_retries: 3, backoff: "1s -> 5s -> 30s"}
    endpoint: {url: "` + endpoint.URL + `/events", timeout: 10s}
`
	defer removeExample(yaml)
	r, err := relay.Parse(ctx, []byte(yaml), relay.Config{
		Runtime: worker.Config{NoSignals: true, Logger: slog.New(slog.DiscardHandler)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()

	b := r.Runtime().Broker()
	if err := b.Declare(ctx, r.Runtime().Subscriptions()...); err != nil {
		fmt.Println(err)
		return
	}
	if err := b.Publish(ctx, "example.payouts."+run, broker.Message{Value: []byte(`{"deal": 42}`)}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-got)
	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// redrive.message payout-executor attempt 1: {"deal": 42}
	// stopped: <nil>
}

// removeExample deletes what the example declared.
func removeExample(yaml string) {
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		return
	}
	rc, err := assembly.RabbitConfig(c, slog.New(slog.DiscardHandler))
	if err == nil {
		_, _ = rabbit.Teardown(context.Background(), rc, c.Subscriptions()...)
	}
}
