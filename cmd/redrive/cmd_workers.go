package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/daemon"
)

func init() {
	register(&command{
		name:    "workers",
		summary: "Print the heartbeat table of every worker instance (Redis)",
		help: `Reads every worker heartbeat from Redis once and prints one line per
instance: its status (RUNNING, PAUSED, SHUTTING_DOWN, LATE, MISSING), severity
(OK, WARNING, CRITICAL), when it last beat and last handled a message, the
lag it reports and why it is not OK. A configured worker of which no
heartbeat was seen is one line, instance "-", MISSING and CRITICAL.
Thresholds come from the heartbeat: section and, per worker, from
lag.thresholds of its topic. A PAUSED instance says who paused it
(operator: 'redrive workers pause'; kill_switch: its downstream fails) and
why. --retired prints the last retirements ('redrive workers retire')
instead.

Exit status, for scripts and cron, from the configured workers' rows
(rows of other worker types are shown but do not count): 0 all OK, 3 the
worst is WARNING, 4 the worst is CRITICAL; 1 Redis cannot be read (health
unknown), 2 bad input.`,
		flags: func(fs *flag.FlagSet) action {
			timeout := fs.Duration("timeout", 10*time.Second, "give up reading Redis after `DURATION`")
			retired := fs.Int("retired", 0, "print the last `N` retirements (who, when, why) instead of the table")
			return func(ctx context.Context, inv *invocation) error {
				if *retired < 0 {
					return usageErrorf("--retired %d is negative", *retired)
				}
				return workers(ctx, inv, *timeout, *retired)
			}
		},
	})
	register(&command{
		name:    "workers retire",
		summary: "Forget a vanished worker instance, so that its missing or shutdown-stuck alert resolves (audited)",
		args:    "TYPE INSTANCE",
		help: `Removes instance INSTANCE of worker TYPE from the heartbeat registry in
Redis (its key, its registry entry, its shutdown mark): the monitor stops
reporting it MISSING or stuck in SHUTTING_DOWN, and its alert resolves. An
instance that still beats RUNNING is refused (its next beat would bring it
back). Each retirement is appended to the audit stream in Redis (who:
--actor, default $USER; why: --reason, required), which 'redrive workers
--retired N' prints.

An instance restarted with the same heartbeat.instance (e.g. a pod name)
needs no retiring: it takes over its own heartbeat.`,
		flags: func(fs *flag.FlagSet) action {
			actor := fs.String("actor", "", "who retires it, for the audit (default $USER)")
			reason := fs.String("reason", "", "why, for the audit (required)")
			return func(ctx context.Context, inv *invocation) error { return retireWorker(ctx, inv, *actor, *reason) }
		},
	})
}

func workers(ctx context.Context, inv *invocation, timeout time.Duration, retired int) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	log := logger()
	rdb := daemon.RedisClient(c, log)
	defer rdb.Close()
	mon, err := daemon.HeartbeatMonitor(c, rdb)
	if err != nil {
		return badInput(err)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if retired > 0 {
		rs, err := heartbeat.Retirements(ctx, rdb, heartbeat.Keys{}, int64(retired))
		if err != nil {
			return fmt.Errorf("cannot read the retirements from redis at %s: %w", c.Redis.Addr, err)
		}
		return renderRetirements(inv, rs)
	}
	rows, err := mon.Check(ctx)
	if err != nil {
		return fmt.Errorf("cannot read heartbeats from redis at %s: %w", c.Redis.Addr, err)
	}
	names := daemon.WorkerNames(c)
	rows = heartbeat.WithExpected(rows, names, time.Now())
	if err := heartbeat.Render(inv.stdout, rows); err != nil {
		return err
	}
	return workersExit(rows, names)
}

// workersExit is the exit of `redrive workers`: the worst severity of the
// configured workers' rows (of every row when none is configured), 0 for
// OK, else a statusError of exitWarning or exitCritical. Rows of worker
// types the configuration does not name (another application's, stale
// ones) are shown but do not count.
func workersExit(rows []heartbeat.WorkerStatus, configured []string) error {
	if len(configured) > 0 {
		rows = slices.DeleteFunc(slices.Clone(rows), func(r heartbeat.WorkerStatus) bool { return !slices.Contains(configured, r.Type) })
	}
	switch worst := heartbeat.Worst(rows); worst {
	case heartbeat.SeverityOK:
		return nil
	case heartbeat.SeverityWarning:
		return &statusError{code: exitWarning, msg: "worst severity of the configured workers: WARNING (exit 3)"}
	default:
		return &statusError{code: exitCritical, msg: fmt.Sprintf("worst severity of the configured workers: %s (exit 4)", worst)}
	}
}

func retireWorker(ctx context.Context, inv *invocation, actor, reason string) error {
	if len(inv.args) != 2 {
		return usageErrorf("want TYPE and INSTANCE, got %d argument(s)", len(inv.args))
	}
	if reason == "" {
		return usageErrorf("--reason is required: the audit records why")
	}
	rdb, addr, err := fleetRedis(inv)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	r, err := heartbeat.Retire(ctx, rdb, heartbeat.Keys{}, inv.args[0], inv.args[1], actorOrUser(actor), reason)
	switch {
	case errors.Is(err, heartbeat.ErrNoInstance), errors.Is(err, heartbeat.ErrInstanceRunning):
		return badInput(err)
	case err != nil:
		return fmt.Errorf("redis at %s: %w", addr, err)
	}
	_, err = fmt.Fprintf(inv.stdout, "retired %s/%s (last beat %s) by %s: %s\n", r.Type, r.Instance,
		r.LastSeen.UTC().Format(time.RFC3339), r.Actor, r.Reason)
	return err
}

func renderRetirements(inv *invocation, rs []heartbeat.Retirement) error {
	tw := tabwriter.NewWriter(inv.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RETIRED AT\tTYPE\tINSTANCE\tLAST BEAT\tBY\tREASON")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.At.UTC().Format(time.RFC3339), r.Type, r.Instance,
			r.LastSeen.UTC().Format(time.RFC3339), r.Actor, r.Reason)
	}
	return tw.Flush()
}
