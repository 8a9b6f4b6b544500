package main

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/assembly/config"
)

func newTopologyPlanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plan",
		Short: "Compare the topology the configuration needs with what exists",
		Long: `Prints, one line per declaration, what ` + "`redrive topology apply`" + ` would do
(the lines of apply --dry-run: keep, create, conflict, bind; on Kafka
create, update or keep per topic), then what exists that the
configuration no longer names ("unnamed"): on RabbitMQ, which cannot list
queues over AMQP, what ` + "`topology apply`" + ` recorded under the prefix (a queue,
<prefix>.topology, holds the record) that no configured worker needs (a
retired worker's queues, old delay queues, another configuration's on the
same prefix), with its messages; on Kafka every topic shaped like a retry
or dead-letter topic (<topic>.retry.<group>, <topic>.dlq) that no
configured worker needs.
The last line says "nothing to do" when apply would change nothing. It
changes nothing, and exits with status 1 when there is a conflict.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return topologyPlanCmd(cmd.Context(), newInvocation(cmd, args))
		},
	}
}

func topologyPlanCmd(ctx context.Context, inv *invocation) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	lines, conflicts, err := topologyPlan(ctx, c)
	if err != nil {
		return err
	}
	todo := 0
	for _, l := range lines {
		fmt.Fprintln(inv.stdout, l)
		if !strings.HasPrefix(l, "keep") && !strings.HasPrefix(l, "bind") {
			todo++
		}
	}
	unnamed, err := topologyUnnamed(ctx, c)
	if err != nil {
		return err
	}
	for _, l := range unnamed {
		fmt.Fprintln(inv.stdout, printable(l)) // names from the server and a record anyone may write
	}
	if todo == 0 {
		fmt.Fprintf(inv.stdout, "# nothing to do: the topology of %d workers on %s is in place\n", len(c.Workers), c.Broker)
	} else {
		fmt.Fprintf(inv.stdout, "# %d declarations to make or resolve; `redrive topology apply` makes them\n", todo)
	}
	if conflicts != nil {
		return fmt.Errorf("the existing topology conflicts with the configuration; `redrive topology apply` would fail:\n%w", conflicts)
	}
	return nil
}

// topologyUnnamed renders what exists that the configuration no longer
// names: on RabbitMQ what the prefix's topology record holds (AMQP lists
// nothing), on Kafka the topics shaped like redrive's.
func topologyUnnamed(ctx context.Context, c *config.Config) ([]string, error) {
	t, err := openTopology(ctx, c, logger())
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return t.Unnamed(ctx, c.Subscriptions())
}

func newTopologyDeleteCmd() *cobra.Command {
	var workers, topics []string
	var actor string
	var all, unnamed, force, yes bool
	cmd := &cobra.Command{
		Use:   "delete (--worker NAME... | --all | --topic NAME...)",
		Short: "Delete the topology of some workers or of the whole configuration (dry run unless --yes)",
		Long: `Deletes what ` + "`redrive topology apply`" + ` declared for the workers named with
--worker (repeatable), or for every configured worker with --all. It is a
dry run unless --yes: every object is looked up and listed with what
would happen to it, and nothing changes.

RabbitMQ: each worker's group queue and dead-letter queue (their bindings
go with them); with --unnamed also what plan lists as unnamed (what
apply recorded that the configuration no longer names: on a prefix that
several configurations share, theirs). The shared objects of the prefix (the exchanges, the delay
queues, the unroutable queue) are deleted only when no configured worker
is left (--all, or --worker naming every one), and an exchange only when
nothing else is bound to it (another application sharing the prefix). A
queue in which messages wait, or that something consumes (a running
worker, the keeper of ` + "`redrive serve`" + `), is refused with its counts.

Kafka: each worker's retry topic (<topic>.retry.<group>) and the DLQ
topic (<topic>.dlq) when no remaining worker has that topic. A topic in
which records wait for their group (the worker's, the keeper's for a DLQ)
is refused with the count. The application topics (<topic>) are never
deleted: redrive may not have created them; name one with --topic.

--force deletes what would be refused, with its messages. Every object
deleted is logged (stderr) with who did it (--actor, default $USER).
Exit status 1 when anything was refused.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return topologyDelete(cmd.Context(), newInvocation(cmd, args), deleteRequest{
				workers: workers, topics: topics, all: all, unnamed: unnamed, force: force, dry: !yes, actor: actor,
			})
		},
	}
	cmd.Flags().StringArrayVar(&workers, "worker", nil, "a configured worker whose objects go (repeatable)")
	cmd.Flags().BoolVar(&all, "all", false, "every configured worker's objects, and the shared ones")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "Kafka: a topic to delete by name (repeatable)")
	cmd.Flags().BoolVar(&unnamed, "unnamed", false, "RabbitMQ: what `topology apply` recorded and the configuration no longer names")
	cmd.Flags().BoolVar(&force, "force", false, "delete queues and topics in which messages wait, and exchanges still bound")
	cmd.Flags().BoolVar(&yes, "yes", false, "delete; without it, a dry run")
	addActorFlag(cmd, &actor)
	return cmd
}

// deleteRequest is what `topology delete` was asked.
type deleteRequest struct {
	workers, topics          []string
	all, unnamed, force, dry bool
	actor                    string // --actor, else $USER, else the OS user
}

func topologyDelete(ctx context.Context, inv *invocation, req deleteRequest) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	switch {
	case req.all && len(req.workers) > 0:
		return usageErrorf("--all and --worker: name the workers, or all of them, not both")
	case !req.all && len(req.workers) == 0 && len(req.topics) == 0 && !req.unnamed:
		return usageErrorf("name the workers with --worker NAME, or --all for every configured worker, or --unnamed")
	}
	var remove, keep []broker.Subscription
	for _, s := range c.Subscriptions() {
		if req.all || slices.Contains(req.workers, s.Group) {
			remove = append(remove, s)
		} else {
			keep = append(keep, s)
		}
	}
	for _, w := range req.workers {
		if !slices.ContainsFunc(remove, func(s broker.Subscription) bool { return s.Group == w }) {
			return usageErrorf("--worker %q: no such worker in the configuration", w)
		}
	}
	who := actorOrUser(req.actor)
	if who == "" {
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
	}
	log := daemonLogger(inv.stderr).With("by", who, "dry_run", req.dry)
	t, err := openTopology(ctx, c, log)
	if err != nil {
		return err
	}
	defer t.Close()
	lines, err := t.Remove(ctx, driver.RemoveRequest{Remove: remove, Keep: keep, Names: req.topics, Unnamed: req.unnamed, Force: req.force, DryRun: req.dry})
	refused := err
	if err != nil && !errors.Is(err, driver.ErrRemoveRefused) {
		return configFault(err)
	}
	for _, l := range lines {
		fmt.Fprintln(inv.stdout, printable(l)) // names the server returned, or a record anyone may write
	}
	if req.dry {
		fmt.Fprintf(inv.stdout, "# dry run: %d objects of %d workers on %s looked up; nothing deleted (--yes deletes)\n", len(lines), len(remove), c.Broker)
	}
	return refused
}
