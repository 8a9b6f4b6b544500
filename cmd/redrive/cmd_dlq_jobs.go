package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/redrive/redrive/dlq"
)

func init() {
	register(&command{
		name:    "dlq jobs",
		summary: "List the replay-all jobs of the server, newest first",
		help: `Prints the running replay-all jobs and the last finished ones (the server
keeps 100 in memory): id, DLQ, state, progress, who started it and when,
and who cancelled it.

` + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			asJSON := fs.Bool("json", false, "print the server's JSON")
			return func(ctx context.Context, inv *invocation) error { return dlqJobs(ctx, inv, fs, &a, *asJSON) }
		},
	})
	register(&command{
		name:    "dlq cancel",
		summary: "Cancel a running replay-all job (audited: who, when)",
		args:    "JOB",
		help: `Stops the replay-all job JOB (see 'redrive dlq jobs') before its next
entry: the entry being replayed is finished, the rest stay pending. The job
records who cancelled it (--actor) and when. A job that has already ended
exits with status 2.

` + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			return func(ctx context.Context, inv *invocation) error { return dlqCancel(ctx, inv, fs, &a) }
		},
	})
}

func dlqJobs(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags, asJSON bool) error {
	if _, err := positional(fs, inv, 0, 0); err != nil {
		return helpShown(err)
	}
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	var out struct {
		Jobs []dlq.Job `json:"jobs"`
	}
	return c.get(ctx, inv, "/jobs", nil, asJSON, &out, func() error { return renderJobs(inv.stdout, out.Jobs) })
}

func dlqCancel(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags) error {
	args, err := positional(fs, inv, 1, 1)
	if err != nil {
		return helpShown(err)
	}
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	var out struct {
		Job dlq.Job `json:"job"`
	}
	if err := c.do(ctx, http.MethodPost, "/jobs/"+url.PathEscape(args[0])+"/cancel", nil, nil, &out); err != nil {
		return err
	}
	j := out.Job
	fmt.Fprintf(inv.stdout, "replay-all job %s of %s %s by %s: %d replayed, %d skipped, %d failed of %d; the rest stay pending\n",
		printable(j.ID), printable(j.DLQ), printable(j.State), printable(dashed(j.CancelledBy)),
		j.Progress.Replayed, j.Progress.Skipped, j.Progress.Failed, j.Progress.Total)
	return nil
}

// renderJobs writes the job table of `dlq jobs`.
func renderJobs(w io.Writer, jobs []dlq.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tDLQ\tSTATE\tREPLAYED\tSKIPPED\tFAILED\tTOTAL\tSTARTED\tBY\tCANCELLED BY")
	for _, j := range jobs {
		p := j.Progress
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", printable(j.ID), printable(j.DLQ), printable(j.State),
			p.Replayed, p.Skipped, p.Failed, p.Total, j.StartedAt.UTC().Format(time.RFC3339), printable(j.Actor), printable(dashed(j.CancelledBy)))
	}
	return tw.Flush()
}
