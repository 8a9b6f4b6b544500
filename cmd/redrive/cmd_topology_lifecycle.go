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
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/backend"
	"github.com/redrive/redrive/internal/config"
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
	var out []string
	if c.Broker == broker.RabbitMQ {
		rc, err := backend.ConfigOf[rabbit.Config](c, logger())
		if err != nil {
			return nil, err
		}
		rs, err := rabbit.Unnamed(ctx, rc, c.Subscriptions()...)
		if errors.Is(err, rabbit.ErrBadRecord) {
			return []string{fmt.Sprintf("# %v: what the configuration no longer names is unknown; `redrive topology apply` writes a new record", err)}, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Action != rabbit.ActionAbsent {
				out = append(out, fmt.Sprintf("unnamed  %s: applied before, no configured worker needs it (delete: redrive topology delete --unnamed)", r.Describe()))
			}
		}
		return out, nil
	}
	kb, closeBroker, err := openKafka(ctx, c)
	if err != nil {
		return nil, err
	}
	defer closeBroker()
	strays, err := kb.Strays(ctx, c.Subscriptions()...)
	for _, s := range strays {
		out = append(out, fmt.Sprintf("unnamed  topic %s: exists, no configured worker needs it (delete: redrive topology delete --topic %s)", s, s))
	}
	return out, err
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
	case req.unnamed && c.Broker != broker.RabbitMQ:
		return usageErrorf("--unnamed is RabbitMQ's (its topology record); on %s name each topic `redrive topology plan` lists with --topic", c.Broker)
	}
	if len(req.topics) > 0 && c.Broker != broker.Kafka {
		return usageErrorf("--topic names Kafka topics; the broker is %s", c.Broker)
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
	var lines []string
	var refused error
	switch c.Broker {
	case broker.RabbitMQ:
		rc, err := backend.ConfigOf[rabbit.Config](c, log)
		if err != nil {
			return err
		}
		rs, err := rabbit.Remove(ctx, rc, rabbit.RemoveRequest{Remove: remove, Keep: keep, Unnamed: req.unnamed, Force: req.force, DryRun: req.dry})
		if err != nil && !errors.Is(err, rabbit.ErrRemoveRefused) {
			return err
		}
		refused = err
		for _, r := range rs {
			lines = append(lines, r.String())
		}
	default:
		kb, closeBroker, err := openKafka(ctx, c)
		if err != nil {
			return err
		}
		defer closeBroker()
		rs, err := kb.Remove(ctx, kafka.RemoveRequest{Remove: remove, Keep: keep, Topics: req.topics, Force: req.force, DryRun: req.dry})
		if err != nil && !errors.Is(err, kafka.ErrRemoveRefused) {
			return err
		}
		refused = err
		for _, r := range rs {
			lines = append(lines, r.String())
			if r.Action == "deleted" {
				log.Info("topology delete", "topic", r.Topic, "role", r.Role, "waiting", r.Waiting, "forced", req.force)
			}
		}
	}
	for _, l := range lines {
		fmt.Fprintln(inv.stdout, printable(l)) // names the server returned, or a record anyone may write
	}
	if req.dry {
		fmt.Fprintf(inv.stdout, "# dry run: %d objects of %d workers on %s looked up; nothing deleted (--yes deletes)\n", len(lines), len(remove), c.Broker)
	}
	return refused
}

// openKafka connects the configured Kafka broker; the function closes it.
func openKafka(ctx context.Context, c *config.Config) (*kafka.Broker, func(), error) {
	b, err := openBroker(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	kb, ok := b.(*kafka.Broker)
	if !ok {
		_ = b.Close()
		return nil, nil, fmt.Errorf("broker %s is not Kafka", c.Broker)
	}
	return kb, func() { _ = kb.Close() }, nil
}
