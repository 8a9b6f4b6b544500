package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// bulkJob is a kind of background job over the pending entries of a DLQ
// that the filters select: replay-all or discard-all. Both commands share
// their flags, the start of the job and following it.
type bulkJob struct {
	kind string // the job's name: "replay-all"
	// rateUsage is the help of --rate.
	rateUsage string
	// reason: the command requires --reason, which the job records.
	reason bool
	// counts says what the job did, for the last line.
	counts func(p dlq.JobProgress) string
}

var (
	replayAllJob = bulkJob{
		kind:      "replay-all",
		rateUsage: "replay at most `N` messages per second: 0.1 to 100000, or 0 = as fast as the broker confirms",
		counts: func(p dlq.JobProgress) string {
			return fmt.Sprintf("%d replayed, %d skipped, %d failed, %d mismatched of %d", p.Replayed, p.Skipped, p.Failed, p.Mismatched, p.Total)
		},
	}
	discardAllJob = bulkJob{
		kind:      "discard-all",
		rateUsage: "discard at most `N` entries per second: 0.1 to 100000, or 0 = as fast as the store allows",
		reason:    true,
		counts: func(p dlq.JobProgress) string {
			return fmt.Sprintf("%d discarded, %d skipped, %d failed of %d", p.Discarded, p.Skipped, p.Failed, p.Total)
		},
	}
)

// bulkJobOf is the kind of job j: discard-all, else replay-all.
func bulkJobOf(j dlq.Job) bulkJob {
	if j.Kind == dlq.JobDiscardAll {
		return discardAllJob
	}
	return replayAllJob
}

func newDLQReplayAllCmd() *cobra.Command {
	return newBulkJobCmd(replayAllJob, &cobra.Command{
		Use:   "replay-all DLQ",
		Short: "Replay every pending dead letter of a DLQ (a background job), showing progress",
		Long: `Starts a replay-all job on the server for the pending entries of DLQ that
the filters select (oldest first, --rate messages per second; the server's
default is 100, 0 = as fast as the broker confirms), then follows it: a
progress bar on stderr, redrawn in place on a terminal, one line per change
otherwise. Exits with status 1 when the job fails; the entry the broker
refused is pending again, so running the command again resumes. Interrupting
the command does not stop the job ('redrive dlq cancel JOB' does).

` + dlqHelp,
	})
}

func newDLQDiscardAllCmd() *cobra.Command {
	return newBulkJobCmd(discardAllJob, &cobra.Command{
		Use:   "discard-all DLQ --reason TEXT",
		Short: "Discard every pending dead letter of a DLQ that the filters select, with a reason (a background job)",
		Long: `Starts a discard-all job on the server for the pending entries of DLQ that
the filters select, typically one failure group (--group, the fingerprint
'redrive dlq groups' prints), and follows it like replay-all. Each entry is
discarded with its own audit row carrying --reason (required) and the
actor. At most --rate entries per second (the server's default is 100, 0 =
as fast as the store allows). Interrupting the command does not stop the
job ('redrive dlq cancel JOB' does).

` + dlqHelp,
	})
}

// bulkFlags are the flags of a bulk job command.
type bulkFlags struct {
	filters
	rate, reason string
	poll         time.Duration
}

// newBulkJobCmd completes cmd (its use and help) as the command of job.
func newBulkJobCmd(job bulkJob, cmd *cobra.Command) *cobra.Command {
	var a adminFlags
	var f bulkFlags
	cmd.Args = exactArgs(1)
	cmd.ValidArgsFunction = completeDLQ
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return job.run(cmd.Context(), newInvocation(cmd, args), a, f)
	}
	a.register(cmd)
	fs := cmd.Flags()
	if job.reason {
		addReasonFlag(cmd, &f.reason, "the entries are discarded")
	}
	fs.Func("rate", job.rateUsage, func(s string) error {
		if _, err := operate.ParseReplayRate(s); err != nil {
			return err
		}
		f.rate = s
		return nil
	})
	addFilterFlags(cmd, &f.filters)
	fs.DurationVar(&f.poll, "poll", 500*time.Millisecond, "check the job's progress every `DURATION`")
	return cmd
}

// run starts the job on the DLQ of inv.args, follows it and prints how it
// ended; a job that did not end done is a runtime failure.
func (job bulkJob) run(ctx context.Context, inv *invocation, a adminFlags, f bulkFlags) error {
	var body any
	switch {
	case job.reason && strings.TrimSpace(f.reason) == "":
		return usageErrorf("--reason is required: say why the entries are discarded (it goes to the audit log)")
	case job.reason:
		body = map[string]string{"reason": f.reason}
	}
	if f.poll <= 0 {
		return usageErrorf("--poll %s must be positive", f.poll)
	}
	c, err := newAdminClient(inv, a)
	if err != nil {
		return err
	}
	q := url.Values{"topic": {inv.args[0]}}
	f.filters.query(q)
	if f.rate != "" {
		q.Set("rate", f.rate)
	}
	var out struct {
		Job dlq.Job `json:"job"`
	}
	if err := c.do(ctx, http.MethodPost, "/"+job.kind, q, body, &out); err != nil {
		return err
	}
	j, err := followJob(ctx, inv, c, out.Job, f.poll)
	if err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "%s of %s %s: %s (job %s)\n", job.kind, printable(j.DLQ), printable(j.State), job.counts(j.Progress), printable(j.ID))
	if j.State != "done" {
		return fmt.Errorf("%s job %s %s: %s", job.kind, j.ID, j.State, dashed(oneLine(j.Error, 0)))
	}
	return nil
}

// followJob polls job every poll until it ends, drawing its progress on
// stderr, and returns it as it ended.
func followJob(ctx context.Context, inv *invocation, c *adminClient, job dlq.Job, poll time.Duration) (dlq.Job, error) {
	var out struct {
		Job dlq.Job `json:"job"`
	}
	bar := newProgressBar(inv.stderr)
	defer bar.done()
	bar.update(job)
	for job.State == "running" {
		select {
		case <-ctx.Done():
			return job, fmt.Errorf("stopped following job %s of %s; it goes on on the server (redrive dlq cancel %[1]s stops it)", job.ID, job.DLQ)
		case <-time.After(poll):
		}
		if err := c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(job.ID), nil, nil, &out); err != nil {
			return job, fmt.Errorf("follow job %s: %w", job.ID, err)
		}
		job = out.Job
		bar.update(job)
	}
	return job, nil
}
