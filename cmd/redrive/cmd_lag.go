package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/daemon"
	"github.com/redrive/redrive/internal/assembly/exporter"
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
	mon, err := assembly.Monitor(ctx, c, logger())
	if err != nil {
		return configFault(err)
	}
	defer mon.Close()
	if gm, ok := mon.(driver.GroupLagMonitor); ok {
		return printGroupLag(ctx, inv, c, gm, partitions, output)
	}
	if partitions {
		return usageErrorf("--partitions is for a broker measured by consumer-group offsets (Kafka); the broker is %s", c.Broker)
	}
	dm, ok := mon.(driver.DepthMonitor)
	if !ok {
		return fmt.Errorf("broker %s measures neither consumer-group lag nor queue depth", c.Broker)
	}
	depths, err := dm.MeasureDepth(ctx)
	if err != nil {
		return fmt.Errorf("measure %s queue depth: %w", c.Broker, err)
	}
	if output.json() {
		now := time.Now()
		return writeLagJSON(inv, exporter.Snapshot{At: now, Broker: c.Broker, Groups: workerGroups(c),
			Depths: &exporter.DepthSample{Depths: depths, At: now}, Thresholds: daemon.LagThresholds(c)})
	}
	return lag.RenderDepths(inv.stdout, depths)
}

// printGroupLag prints the lag of the configured workers' consumer
// groups, one sample graded by a tracker.
func printGroupLag(ctx context.Context, inv *invocation, c *config.Config, gm driver.GroupLagMonitor, partitions bool, output outputFormat) error {
	tr, err := lag.NewTracker(lag.TrackerConfig{Thresholds: daemon.LagThresholds(c)})
	if err != nil {
		return badInput(err)
	}
	s, err := gm.MeasureGroups(ctx)
	if err != nil {
		return fmt.Errorf("measure %s lag at %s: %w", c.Broker, daemon.BrokerAddress(c), err)
	}
	s = onlyWorkers(s, daemon.WorkerNames(c))
	rep := tr.Observe(s)
	if output.json() {
		return writeLagJSON(inv, exporter.Snapshot{At: rep.At, Broker: c.Broker, GroupLag: &exporter.GroupLagSample{Report: rep, Sampled: true}})
	}
	if partitions {
		return lag.RenderPartitions(inv.stdout, rep)
	}
	return lag.RenderGroups(inv.stdout, rep)
}

// onlyWorkers keeps the groups of s that are configured workers (the
// backend's monitor also measures groups of its own, such as its DLQ
// keeper's, which the exporter reports and this table does not).
func onlyWorkers(s lag.GroupSample, workers []string) lag.GroupSample {
	keep := func(g string) bool { return slices.Contains(workers, g) }
	parts := s.Partitions[:0:0]
	for _, p := range s.Partitions {
		if keep(p.Group) {
			parts = append(parts, p)
		}
	}
	s.Partitions = parts
	errs := make(map[string]error, len(s.GroupErrors))
	for g, err := range s.GroupErrors {
		if keep(g) {
			errs[g] = err
		}
	}
	s.GroupErrors = errs
	return s
}

// workerGroups are the configured workers as the exporter grades them.
func workerGroups(c *config.Config) []exporter.Group {
	out := make([]exporter.Group, 0, len(c.Workers))
	for _, w := range c.Workers {
		out = append(out, exporter.Group{Group: w.Name, Topic: w.Topic})
	}
	return out
}

// writeLagJSON prints the lag of s as /healthz reports it
// (components.lag): per group its lag, level and status, and, measured
// by queue depth, every measured queue.
func writeLagJSON(inv *invocation, s exporter.Snapshot) error {
	return writeJSON(inv.stdout, exporter.Evaluate(s).Components.Lag)
}
