package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
	"github.com/redrive/redrive/internal/daemon"
	"github.com/redrive/redrive/internal/exporter"
	"github.com/redrive/redrive/lag"
)

func newLagCmd() *cobra.Command {
	var partitions bool
	var timeout time.Duration
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Print consumer lag (Kafka) or queue depth (RabbitMQ) of the configured workers",
		Long: `Measures once and prints a table.

Kafka: per consumer group (the configured workers) and topic, the lag in
records and in seconds (age of the oldest unconsumed record), the level
against lag.thresholds and the status (one sample tells only OK and STOP;
'redrive exporter' grades a window of samples). --partitions prints one
line per partition instead.

RabbitMQ: every group queue, its DLQ, every delay tier and the unroutable
queue, with the messages ready and the number of consumers. Messages
delivered but not yet acknowledged are not counted.

Exits with status 1 when the broker cannot be reached.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printLag(cmd.Context(), newInvocation(cmd, args), partitions, timeout, *output)
		},
	}
	cmd.Flags().BoolVar(&partitions, "partitions", false, "Kafka: one line per partition")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after `DURATION`")
	output = addOutputFlag(cmd)
	return cmd
}

func printLag(ctx context.Context, inv *invocation, partitions bool, timeout time.Duration, output outputFormat) error {
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
		return printKafkaLag(ctx, inv, c, partitions, output)
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
	groups := make([]exporter.Group, 0, len(c.Workers))
	for _, w := range c.Workers {
		q := rabbit.Queue(w.Topic, w.Name)
		queues = append(queues, q)
		groups = append(groups, exporter.Group{Group: w.Name, Topic: w.Topic, Queue: q})
	}
	delay, err := backend.DelayQueues(c)
	if err != nil {
		return badInput(err)
	}
	depths, err := r.Measure(ctx, lag.RabbitQueues(rabbit.Names{Prefix: c.RabbitMQ.Prefix}, delay, queues...)...)
	if err != nil {
		return fmt.Errorf("measure rabbitmq queue depth: %w", err)
	}
	if output.json() {
		now := time.Now()
		return writeLagJSON(inv, exporter.Snapshot{At: now, Broker: c.Broker, Groups: groups,
			Rabbit: &exporter.RabbitSample{Depths: depths, At: now}, Thresholds: daemon.LagThresholds(c)})
	}
	return lag.RenderRabbit(inv.stdout, depths)
}

func printKafkaLag(ctx context.Context, inv *invocation, c *config.Config, partitions bool, output outputFormat) error {
	cl, err := daemon.KafkaClient(c)
	if err != nil {
		return fmt.Errorf("kafka client for %s: %w", daemon.BrokerAddress(c), err)
	}
	defer cl.Close()
	k, err := lag.NewKafka(cl, lag.KafkaConfig{Groups: daemon.WorkerNames(c), ShareGroups: daemon.ShareGroups(c)})
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
	if output.json() {
		return writeLagJSON(inv, exporter.Snapshot{At: rep.At, Broker: c.Broker, Kafka: &exporter.KafkaSample{Report: rep, Sampled: true}})
	}
	if partitions {
		return lag.RenderKafkaPartitions(inv.stdout, rep)
	}
	return lag.RenderKafka(inv.stdout, rep)
}

// writeLagJSON prints the lag of s as /healthz reports it
// (components.lag): per group its lag, level and status, and on RabbitMQ
// every measured queue.
func writeLagJSON(inv *invocation, s exporter.Snapshot) error {
	return writeJSON(inv.stdout, exporter.Evaluate(s).Components.Lag)
}
