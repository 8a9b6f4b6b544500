package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	_ "github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// payoutProgram is the README's worker program: handlers mapped to worker
// names, a configuration that names the broker. It runs until ctx ends and
// reports each payout it made, the first attempt of every payment failing.
func payoutProgram(ctx context.Context, yaml string, paid chan<- string, ready chan<- broker.Broker) error {
	rt, err := worker.Parse(ctx, []byte(yaml), worker.Config{NoSignals: true, Logger: quietLogger()})
	if err != nil {
		return err
	}
	if err := rt.Broker().Declare(ctx, rt.Subscriptions()...); err != nil {
		return err
	}
	ready <- rt.Broker()
	return rt.Run(ctx, worker.Handlers{
		"payout-executor": func(ctx context.Context, d *broker.Delivery) error {
			if d.Attempt == 1 {
				return fmt.Errorf("bank timeout for %s", d.Value)
			}
			paid <- string(d.Value)
			return nil
		},
	})
}

// TestSameProgramOnBothBrokers runs payoutProgram unchanged on RabbitMQ and
// on Kafka; only the broker lines of the YAML differ.
func TestSameProgramOnBothBrokers(t *testing.T) {
	id := broker.NewMessageID()[:6]
	workers := fmt.Sprintf(`
workers:
  - name: payout-executor
    topic: e2e.program.%s
    retry: {max_retries: 3, backoff: "100ms -> 200ms"}
`, id)
	configs := map[string]string{
		"rabbitmq": fmt.Sprintf("broker: rabbitmq\nrabbitmq: {url: %q, prefix: e2e-prog-%s, delay: {resolution: 100ms, factor: 2, levels: 3}}\n",
			testenv.RabbitMQ.URL(), id) + workers,
		"kafka": fmt.Sprintf("broker: kafka\nkafka: {brokers: [%q], fetch_max_wait: 100ms, commit_interval: 100ms}\n",
			strings.Join(kafkatest.Cluster(t), ",")) + workers,
	}
	for name, yaml := range configs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			paid, ready, done := make(chan string, 3), make(chan broker.Broker, 1), make(chan error, 1)
			go func() { done <- payoutProgram(ctx, yaml, paid, ready) }()
			var b broker.Broker
			select {
			case b = <-ready:
				if rb, ok := b.(*rabbit.Broker); ok {
					plan := rb.Plan(broker.Subscription{Topic: "e2e.program." + id, Group: "payout-executor"})
					t.Cleanup(func() { deleteTopology(t, plan) })
				}
			case err := <-done:
				t.Fatalf("program: %v", err)
			}
			topic := "e2e.program." + id
			for _, deal := range []string{"deal-1", "deal-2", "deal-3"} {
				if err := b.Publish(ctx, topic, broker.Message{Key: []byte(deal), Value: []byte(deal)}); err != nil {
					t.Fatalf("publish: %v", err)
				}
			}
			got := map[string]bool{}
			for len(got) < 3 {
				select {
				case d := <-paid:
					got[d] = true
				case <-ctx.Done():
					t.Fatalf("paid %v before the deadline, want deal-1..3", got)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("program stopped with %v", err)
			}
		})
	}
}
