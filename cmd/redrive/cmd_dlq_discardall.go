package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
)

func init() {
	register(&command{
		name:    "dlq discard-all",
		summary: "Discard every pending dead letter of a DLQ that the filters select, with a reason (a background job)",
		args:    "DLQ --reason TEXT",
		help: `Starts a discard-all job on the server for the pending entries of DLQ that
the filters select, typically one failure group (--group, the fingerprint
'redrive dlq groups' prints), and follows it like replay-all. Each entry is
discarded with its own audit row carrying --reason (required) and the
actor. At most --rate entries per second (the server's default is 100, 0 =
as fast as the store allows). Interrupting the command does not stop the
job ('redrive dlq cancel ID' does).

` + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			var f replayAllFlags
			reason := fs.String("reason", "", "why the entries are discarded (`TEXT`, required)")
			fs.Func("rate", "discard at most `N` entries per second: 0.1 to 100000, or 0 = as fast as the store allows", func(s string) error {
				if _, err := dlq.ParseReplayRate(s); err != nil {
					return err
				}
				f.rate = s
				return nil
			})
			fs.StringVar(&f.errorClass, "error-class", "", "only entries of error `CLASS`")
			fs.StringVar(&f.text, "q", "", "only entries whose error message contains `TEXT`")
			fs.StringVar(&f.group, "group", "", "only entries of the failure group `FINGERPRINT` (see redrive dlq groups)")
			fs.DurationVar(&f.poll, "poll", 500*time.Millisecond, "check the job's progress every `DURATION`")
			return func(ctx context.Context, inv *invocation) error { return dlqDiscardAll(ctx, inv, fs, &a, &f, reason) }
		},
	})
}

func dlqDiscardAll(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags, fp *replayAllFlags, reasonFlag *string) error {
	args, err := positional(fs, inv, 1, 1)
	if err != nil {
		return helpShown(err)
	}
	f, reason := *fp, *reasonFlag
	switch {
	case strings.TrimSpace(reason) == "":
		return usageErrorf("--reason is required: say why the entries are discarded (it goes to the audit log)")
	case f.poll <= 0:
		return usageErrorf("--poll %s must be positive", f.poll)
	}
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	q := url.Values{"topic": {args[0]}}
	for k, v := range map[string]string{"rate": f.rate, "error_class": f.errorClass, "q": f.text, "group": f.group} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out struct {
		Job dlq.Job `json:"job"`
	}
	if err := c.do(ctx, http.MethodPost, "/discard-all", q, map[string]string{"reason": reason}, &out); err != nil {
		return err
	}
	job, err := followJob(ctx, inv, c, out.Job, f.poll)
	if err != nil {
		return err
	}
	p := job.Progress
	fmt.Fprintf(inv.stdout, "discard-all of %s %s: %d discarded, %d skipped, %d failed of %d (job %s)\n",
		printable(job.DLQ), printable(job.State), p.Discarded, p.Skipped, p.Failed, p.Total, printable(job.ID))
	if job.State != "done" {
		return fmt.Errorf("discard-all job %s %s: %s", job.ID, job.State, dashed(oneLine(job.Error, 0)))
	}
	return nil
}
