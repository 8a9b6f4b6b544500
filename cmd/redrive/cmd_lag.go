package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/internal/daemon"
	"github.com/redrive/redrive/lag"
)

func init() {
	register(&command{
		name:    "lag",
		summary: "Print consumer lag (Kafka) or queue depth (RabbitMQ) of the configured workers",
		help: `Measures once and prints a table.

Kafka: per consumer group (the configured workers) and topic, the lag in
records and in seconds (age of the oldest unconsumed record), the level
against lag.thresholds and the status (one sample tells only OK and STOP;
'redrive exporter' grades a window of samples). --partitions prints one
line per partition instead.

RabbitMQ: every group queue, its DLQ, every delay tier and the unroutable
queue, with the messages ready and the number of consumers. Messages
delivered but not yet acknowledged are not counted.

Exits with status 1 when the broker cannot be reached.`,
		flags: func(fs *flag.FlagSet) action {
			parts := fs.Bool("partitions", false, "Kafka: one line per partition")
			timeout := fs.Duration("timeout", 30*time.Second, "give up after `DURATION`")
			return func(ctx context.Context, inv *invocation) error { return printLag(ctx, inv, *parts, *timeout) }
		},
	})
}

func printLag(ctx context.Context, inv *invocation, partitions bool, timeout time.Duration) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if c.Broker == broker.Kafka {
		return printKafkaLag(ctx, inv, c, partitions)
	}
	if partitions {
		return usageErrorf("--partitions is for Kafka; the broker is %s", c.Broker)
	}
	r, err := daemon.RabbitDepth(c, logger())
	if err != nil {
		return badInput(err)
	}
	defer r.Close()
	queues := make([]string, 0, len(c.Workers))
	for _, w := range c.Workers {
		queues = append(queues, rabbit.Queue(w.Topic, w.Name))
	}
	delay, err := backend.DelayQueues(c)
	if err != nil {
		return badInput(err)
	}
	depths, err := r.Measure(ctx, lag.RabbitQueues(rabbit.Names{Prefix: c.RabbitMQ.Prefix}, delay, queues...)...)
	if err != nil {
		return fmt.Errorf("measure rabbitmq queue depth: %w", err)
	}
	return lag.RenderRabbit(inv.stdout, depths)
}

func printKafkaLag(ctx context.Context, inv *invocation, c *config.Config, partitions bool) error {
	cl, err := daemon.KafkaClient(c)
	if err != nil {
		return fmt.Errorf("kafka client for %s: %w", daemon.BrokerAddress(c), err)
	}
	defer cl.Close()
	k, err := lag.NewKafka(cl, lag.KafkaConfig{Groups: daemon.WorkerNames(c)})
	if err != nil {
		return err
	}
	tr, err := lag.NewTracker(lag.TrackerConfig{Thresholds: daemon.LagThresholds(c)})
	if err != nil {
		return badInput(err)
	}
	s, err := k.Measure(ctx)
	if err != nil {
		return fmt.Errorf("measure kafka lag at %s: %w", daemon.BrokerAddress(c), err)
	}
	rep := tr.Observe(s)
	if partitions {
		return lag.RenderKafkaPartitions(inv.stdout, rep)
	}
	return lag.RenderKafka(inv.stdout, rep)
}
