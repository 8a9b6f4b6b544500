package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

func newTopologyApplyCmd() *cobra.Command {
	var dry bool
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Declare the exchanges, queues and topics the configured workers need",
		Long: `Declares, idempotently, everything the configured workers need on the
configured broker. RabbitMQ: the topics, retry and dead-letter exchanges,
the delay tiers, the unroutable queue, and per worker its group queue and
dead-letter queue. Every declaration that clashes with an existing queue
is reported, one line each, naming the queue, the argument, both values,
the messages it holds and how to migrate (a queue's type, classic or
quorum, cannot be changed in place: see docs/production.md). A quorum
queue whose only difference is its x-delivery-limit (max_claims) is kept,
with a warning.

With --dry-run it changes nothing and compares the plan with what exists,
one line per declaration: keep (exists as planned; a queue with its
messages and consumers), create, conflict (exists with other settings:
every one is listed, with its explanation), bind (RabbitMQ bindings are
re-applied idempotently); on Kafka create, update or keep per topic. It
exits with status 1 when there is a conflict.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return topologyApply(cmd.Context(), newInvocation(cmd, args), dry)
		},
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the plan, change nothing")
	return cmd
}

func topologyApply(ctx context.Context, inv *invocation, dry bool) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	subs := c.Subscriptions()
	if dry {
		lines, conflicts, err := topologyPlan(ctx, c)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintln(inv.stdout, l)
		}
		fmt.Fprintf(inv.stdout, "# dry run: %d declarations for %d workers on %s; nothing changed\n", len(lines), len(subs), c.Broker)
		if conflicts != nil {
			return fmt.Errorf("the existing topology conflicts with the configuration; `redrive topology apply` would fail:\n%w", conflicts)
		}
		return nil
	}
	if err := declareTopology(ctx, c); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "topology of %d workers applied on %s\n", len(subs), c.Broker)
	return nil
}

// declareTopology declares what the configured workers need, reporting
// every clash (on RabbitMQ the shared queues' included: connecting a
// broker would stop at the first of those).
func declareTopology(ctx context.Context, c *config.Config) error {
	t, err := openTopology(ctx, c, logger())
	if err != nil {
		return err
	}
	defer t.Close()
	return configFault(t.Apply(ctx, c.Subscriptions()))
}

// topologyPlan renders the plan compared with what exists, and the
// conflicts (nil when there are none). It connects.
func topologyPlan(ctx context.Context, c *config.Config) ([]string, error, error) {
	t, err := openTopology(ctx, c, logger())
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	lines, conflicts, err := t.Plan(ctx, c.Subscriptions())
	return lines, conflicts, configFault(err)
}

// openTopology opens what manages the topology of the configured
// backend; a backend without one, or a configuration it refuses, is bad
// input.
func openTopology(ctx context.Context, c *config.Config, log *slog.Logger) (driver.Topology, error) {
	t, err := assembly.Topology(ctx, c, log)
	return t, configFault(err)
}
