package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/dlq"
)

func newDLQJobsCmd() *cobra.Command {
	var a adminFlags
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List the replay-all and discard-all jobs of the server, newest first",
		Long: `Prints the running replay-all and discard-all jobs and the last finished
ones (the server keeps 100 in memory): id, DLQ, state, progress, who
started it and when, and who cancelled it. --output json prints the
server's JSON.

` + dlqHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqJobs(cmd.Context(), newInvocation(cmd, args), a, output)
		},
	}
	a.register(cmd)
	output = addOutputFlag(cmd)
	return cmd
}

func newDLQCancelCmd() *cobra.Command {
	var a adminFlags
	cmd := &cobra.Command{
		Use:   "cancel JOB",
		Short: "Cancel a running replay-all or discard-all job (audited: who, when)",
		Long: `Stops the job JOB (see 'redrive dlq jobs') before its next entry: the
entry being handled is finished, the rest stay pending. The job records
who cancelled it (its token's name) and when. A job that has already ended exits
with status 2.

` + dlqHelp,
		Args:              exactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqCancel(cmd.Context(), newInvocation(cmd, args), a)
		},
	}
	a.register(cmd)
	return cmd
}

func dlqJobs(ctx context.Context, inv *invocation, a adminFlags, output *outputFormat) error {
	c, err := newAdminClient(inv, a)
	if err != nil {
		return err
	}
	var out struct {
		Jobs []dlq.Job `json:"jobs"`
	}
	return c.get(ctx, inv, "/jobs", nil, output.json(), &out, func() error { return renderJobs(inv.stdout, out.Jobs) })
}

func dlqCancel(ctx context.Context, inv *invocation, a adminFlags) error {
	c, err := newAdminClient(inv, a)
	if err != nil {
		return err
	}
	var out struct {
		Job dlq.Job `json:"job"`
	}
	if err := c.do(ctx, http.MethodPost, "/jobs/"+url.PathEscape(inv.args[0])+"/cancel", nil, nil, &out); err != nil {
		return err
	}
	j := out.Job
	kind := bulkJobOf(j)
	fmt.Fprintf(inv.stdout, "%s job %s of %s %s by %s: %s; the rest stay pending\n", kind.kind,
		printable(j.ID), printable(j.DLQ), printable(j.State), printable(dashed(j.CancelledBy)), kind.counts(j.Progress))
	return nil
}

// renderJobs writes the job table of `dlq jobs`.
func renderJobs(w io.Writer, jobs []dlq.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tKIND\tDLQ\tSTATE\tREPLAYED\tDISCARDED\tSKIPPED\tFAILED\tTOTAL\tSTARTED\tBY\tCANCELLED BY")
	for _, j := range jobs {
		p := j.Progress
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", printable(j.ID), bulkJobOf(j).kind, printable(j.DLQ), printable(j.State),
			p.Replayed, p.Discarded, p.Skipped, p.Failed, p.Total, j.StartedAt.UTC().Format(time.RFC3339), printable(j.Actor), printable(dashed(j.CancelledBy)))
	}
	return tw.Flush()
}
