package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/config"
)

func init() {
	register(&command{
		name:    "topology apply",
		summary: "Declare the exchanges, queues and topics the configured workers need",
		help: `Declares, idempotently, everything the configured workers need on the
configured broker. RabbitMQ: the topics, retry and dead-letter exchanges,
the delay tiers, the unroutable queue, and per worker its group queue and
dead-letter queue. With --dry-run it prints the plan and changes nothing.
A declaration that clashes with an existing queue fails with one line naming
the queue, the argument, both values and how to migrate.`,
		flags: func(fs *flag.FlagSet) action {
			dry := fs.Bool("dry-run", false, "print the plan, change nothing")
			return func(ctx context.Context, inv *invocation) error {
				return topologyApply(ctx, inv, *dry)
			}
		},
	})
}

func topologyApply(ctx context.Context, inv *invocation, dry bool) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	subs := c.Subscriptions()
	if dry {
		lines, err := topologyPlan(ctx, c)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintln(inv.stdout, l)
		}
		fmt.Fprintf(inv.stdout, "# dry run: %d declarations for %d workers on %s; nothing changed\n", len(lines), len(subs), c.Broker)
		return nil
	}
	b, err := openBroker(ctx, c)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.Declare(ctx, subs...); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "topology of %d workers applied on %s\n", len(subs), c.Broker)
	return nil
}

// planner is a broker that can say what Declare would do.
type planner interface {
	PlanTopology(ctx context.Context, c *config.Config) ([]string, error)
}

// topologyPlan renders the plan. RabbitMQ plans without connecting; a
// backend that must look at the cluster to plan (Kafka) connects.
func topologyPlan(ctx context.Context, c *config.Config) ([]string, error) {
	if c.Broker == config.BrokerRabbitMQ {
		rc, err := rabbit.ConfigFrom(c.RabbitMQ, logger())
		if err != nil {
			return nil, err
		}
		plan, err := rabbit.Plan(rc, c.Subscriptions()...)
		if err != nil {
			return nil, badInput(err)
		}
		lines := make([]string, len(plan))
		for i, d := range plan {
			lines[i] = d.String()
		}
		return lines, nil
	}
	b, err := openBroker(ctx, c)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	p, ok := b.(planner)
	if !ok {
		return nil, fmt.Errorf("broker %s cannot plan its topology", c.Broker)
	}
	return p.PlanTopology(ctx, c)
}
