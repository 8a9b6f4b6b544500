package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"text/tabwriter"
	"time"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly/daemon"
	"github.com/redrive/redrive/internal/assembly/exporter"
)

func newWorkersCmd() *cobra.Command {
	var timeout time.Duration
	var retired int
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "Print the heartbeat table of every worker instance (Redis)",
		Long: `Reads every worker heartbeat from Redis once and prints one line per
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
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if retired < 0 {
				return usageErrorf("--retired %d is negative", retired)
			}
			return workers(cmd.Context(), newInvocation(cmd, args), timeout, retired, *output)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "give up reading Redis after `DURATION`")
	cmd.Flags().IntVar(&retired, "retired", 0, "print the last `N` retirements (who, when, why) instead of the table")
	output = addOutputFlag(cmd)
	cmd.AddCommand(newWorkersRetireCmd(), newWorkersPauseCmd(), newWorkersResumeCmd())
	return cmd
}

func newWorkersRetireCmd() *cobra.Command {
	var actor, reason string
	cmd := &cobra.Command{
		Use:   "retire TYPE INSTANCE",
		Short: "Forget a vanished worker instance, so that its missing or shutdown-stuck alert resolves (audited)",
		Long: `Removes instance INSTANCE of worker TYPE from the heartbeat registry in
Redis (its key, its registry entry, its shutdown mark): the monitor stops
reporting it MISSING or stuck in SHUTTING_DOWN, and its alert resolves. An
instance that still beats RUNNING is refused (its next beat would bring it
back). Each retirement is appended to the audit stream in Redis (who:
--actor, default $USER; why: --reason, required), which 'redrive workers
--retired N' prints.

An instance restarted with the same heartbeat.instance (e.g. a pod name)
needs no retiring: it takes over its own heartbeat.`,
		Args:              exactArgs(2),
		ValidArgsFunction: completeWorker,
		RunE: func(cmd *cobra.Command, args []string) error {
			return retireWorker(cmd.Context(), newInvocation(cmd, args), actor, reason)
		},
	}
	addActorFlag(cmd, &actor)
	addReasonFlag(cmd, &reason, "it is retired")
	return cmd
}

func workers(ctx context.Context, inv *invocation, timeout time.Duration, retired int, output outputFormat) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	log := logger()
	rdb := daemon.RedisClient(c, log)
	defer rdb.Close()
	mcfg := daemon.HeartbeatMonitorConfig(c, log)
	mcfg.ScanKeysPerCheck = wholeScan // one check: every key found by its key alone, within --timeout
	mon, err := heartbeat.NewMonitor(rdb, mcfg)
	if err != nil {
		return badInput(err)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if retired > 0 {
		rs, err := heartbeat.Retirements(ctx, rdb, daemon.HeartbeatKeys(c), int64(retired))
		if err != nil {
			return fmt.Errorf("cannot read the retirements from redis at %s: %w", c.Redis.Addr, err)
		}
		if output.json() {
			return writeJSON(inv.stdout, map[string]any{"retirements": retirementsJSON(rs)})
		}
		return renderRetirements(inv, rs)
	}
	rows, err := mon.Check(ctx)
	if err != nil {
		return fmt.Errorf("cannot read heartbeats from redis at %s: %w", c.Redis.Addr, err)
	}
	names := daemon.WorkerNames(c)
	now := time.Now()
	rows = heartbeat.WithExpected(rows, names, now)
	dropped := mon.Dropped()
	if output.json() {
		// The rows as /healthz reports them (components.workers).
		h := exporter.Evaluate(exporter.Snapshot{At: now, Workers: &exporter.WorkersSample{Rows: rows, At: now, Dropped: dropped}})
		out := map[string]any{"workers": h.Components.Workers}
		if h.Components.WorkersLeftOut != nil {
			out["workers_left_out"] = h.Components.WorkersLeftOut
		}
		err = writeJSON(inv.stdout, out)
	} else {
		err = heartbeat.Render(inv.stdout, rows)
		if err == nil && dropped.Total() > 0 {
			_, err = fmt.Fprintf(inv.stdout, "%d instance(s) left out: %d beyond heartbeat.max_instances (%d), %d with a name no worker can have\n",
				dropped.Total(), dropped.OverLimit, dropped.Limit, dropped.BadNames)
		}
	}
	if err != nil {
		return err
	}
	return workersExit(rows, names)
}

// wholeScan is the discovery budget of `redrive workers`: a whole pass
// over any Redis it is likely to meet, bounded by --timeout.
const wholeScan = 100_000_000

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
	if reason == "" {
		return usageErrorf("--reason is required: the audit records why")
	}
	actor, err := auditActor(actor)
	if err != nil {
		return err
	}
	rdb, keys, addr, err := fleetRedis(inv)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	r, err := heartbeat.Retire(ctx, rdb, keys, inv.args[0], inv.args[1], actor, reason)
	switch {
	case errors.Is(err, heartbeat.ErrNoInstance), errors.Is(err, heartbeat.ErrInstanceRunning),
		errors.Is(err, heartbeat.ErrBadActor), errors.Is(err, heartbeat.ErrBadReason):
		return badInput(err)
	case err != nil:
		return fmt.Errorf("redis at %s: %w", addr, err)
	}
	_, err = fmt.Fprintf(inv.stdout, "retired %s/%s (last beat %s) by %s: %s\n", printable(r.Type), printable(r.Instance),
		timeOrDash(r.LastSeen), printable(r.Actor), printable(r.Reason))
	return err
}

// timeOrDash is t in RFC 3339 UTC, "-" for the zero time (unknown).
func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func renderRetirements(inv *invocation, rs []heartbeat.Retirement) error {
	tw := tabwriter.NewWriter(inv.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RETIRED AT\tTYPE\tINSTANCE\tLAST BEAT\tBY\tREASON")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", timeOrDash(r.At), printable(r.Type), printable(r.Instance),
			timeOrDash(r.LastSeen), printable(r.Actor), printable(r.Reason))
	}
	return tw.Flush()
}

// retirementJSON is a retirement in --output json.
type retirementJSON struct {
	At       time.Time `json:"at"`
	Type     string    `json:"type"`
	Instance string    `json:"instance"`
	LastSeen time.Time `json:"last_seen"`
	Actor    string    `json:"actor"`
	Reason   string    `json:"reason"`
}

func retirementsJSON(rs []heartbeat.Retirement) []retirementJSON {
	out := make([]retirementJSON, len(rs))
	for i, r := range rs {
		out[i] = retirementJSON{At: r.At.UTC(), Type: r.Type, Instance: r.Instance, LastSeen: r.LastSeen.UTC(), Actor: r.Actor, Reason: r.Reason}
	}
	return out
}
