package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
)

const dlqHelp = `Talks to the admin API of 'redrive serve': --server (default http:// +
admin.listen), with the bearer token --token, else $REDRIVE_ADMIN_TOKEN,
else admin.token. The audit log records --actor (default $USER), else the
token's name. An answer 4xx (bad request, unknown entry, not pending) exits
with status 2 and the server's message; 5xx or an unreachable server exits
with status 1.`

func init() {
	register(&command{
		name:    "dlq ls",
		summary: "List the DLQs with their counts, or the entries of one DLQ",
		args:    "[DLQ]",
		help: `Without DLQ: every DLQ with its counts by status. With DLQ: its entries,
newest first, one page (--limit, default 50, at most 500); the next page is
--cursor as printed. Filters: --status, --error-class, --q (text in the
error message, any case), --group (a failure group's fingerprint, as
'redrive dlq groups DLQ' prints it).

` + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			var f lsFlags
			fs.StringVar(&f.status, "status", "", "only entries in `STATUS` (pending, replaying, replayed, discarded, archived)")
			fs.StringVar(&f.errorClass, "error-class", "", "only entries of error `CLASS`")
			fs.StringVar(&f.text, "q", "", "only entries whose error message contains `TEXT`")
			fs.StringVar(&f.group, "group", "", "only entries of the failure group `FINGERPRINT` (see redrive dlq groups)")
			fs.IntVar(&f.limit, "limit", 0, "at most `N` entries (default 50, at most 500)")
			fs.StringVar(&f.cursor, "cursor", "", "continue at `CURSOR` (printed after a full page)")
			fs.BoolVar(&f.json, "json", false, "print the server's JSON")
			return func(ctx context.Context, inv *invocation) error { return dlqLs(ctx, inv, fs, &a, &f) }
		},
	})
	register(&command{
		name:    "dlq show",
		summary: "Show one dead letter: payload, headers, error and audit trail",
		args:    "DLQ ID",
		help:    "Prints the entry, its key, headers, payload (JSON indented), stack trace and audit trail.\n\n" + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			asJSON := fs.Bool("json", false, "print the server's JSON")
			return func(ctx context.Context, inv *invocation) error { return dlqShow(ctx, inv, fs, &a, asJSON) }
		},
	})
	register(&command{
		name:    "dlq replay",
		summary: "Replay one dead letter to the worker that gave up on it",
		args:    "DLQ ID",
		help: `Republishes the entry byte for byte to its destination, the worker that
gave up on it (RabbitMQ: its queue <topic>.<worker>; Kafka: its retry topic
<topic>.retry.<worker>), waits for the broker's confirm and marks it
replayed, with an audit row naming the destination. It prints the
destination as the console and the audit log name it.

` + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			return func(ctx context.Context, inv *invocation) error { return dlqReplay(ctx, inv, fs, &a) }
		},
	})
	register(&command{
		name:    "dlq replay-all",
		summary: "Replay every pending dead letter of a DLQ (a background job), showing progress",
		args:    "DLQ",
		help: `Starts a replay-all job on the server for the pending entries of DLQ that
the filters select (oldest first, --rate messages per second; the server's
default is 100, 0 = as fast as the broker confirms), then follows it: a
progress bar on stderr, redrawn in place on a terminal, one line per change
otherwise. Exits with status 1 when the job fails; the entry the broker
refused is pending again, so running the command again resumes. Interrupting
the command does not stop the job.

` + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			var f replayAllFlags
			fs.Func("rate", "replay at most `N` messages per second: 0.1 to 100000, or 0 = as fast as the broker confirms", func(s string) error {
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
			return func(ctx context.Context, inv *invocation) error { return dlqReplayAll(ctx, inv, fs, &a, &f) }
		},
	})
	register(&command{
		name:    "dlq discard",
		summary: "Discard one dead letter, with a reason (audited)",
		args:    "DLQ ID --reason TEXT",
		help:    "Marks the entry discarded; --reason is required and goes to the audit log.\n\n" + dlqHelp,
		flags: func(fs *flag.FlagSet) action {
			var a adminFlags
			a.register(fs)
			reason := fs.String("reason", "", "why the entry is discarded (`TEXT`, required)")
			return func(ctx context.Context, inv *invocation) error { return dlqDiscard(ctx, inv, fs, &a, reason) }
		},
	})
}

type lsFlags struct {
	status, errorClass, text, group, cursor string
	limit                                   int
	json                                    bool
}

type replayAllFlags struct {
	rate, errorClass, text, group string
	poll                          time.Duration
}

// errHelpShown ends a command whose --help came after its arguments.
var errHelpShown = errors.New("help shown")

// positional returns the positional arguments of inv, parsing the flags
// that follow them ("dlq discard Q ID --reason x"; the flag package stops
// at the first positional argument), and checks their number.
func positional(fs *flag.FlagSet, inv *invocation, minArgs, maxArgs int) ([]string, error) {
	var args []string
	rest := inv.args
	for len(rest) > 0 {
		if rest[0] == "--" {
			args = append(args, rest[1:]...)
			break
		}
		args = append(args, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printCommandUsage(inv.stdout, registry[inv.name], fs)
				return nil, errHelpShown
			}
			return nil, flagError(fs, inv.name, err)
		}
		rest = fs.Args()
	}
	inv.configPath = fs.Lookup("config").Value.String() // --config may follow the arguments too
	if len(args) < minArgs || len(args) > maxArgs {
		return nil, usageErrorf("usage: redrive %s [flags] %s (run 'redrive %s --help')", inv.name, registry[inv.name].args, inv.name)
	}
	return args, nil
}

// helpShown turns errHelpShown into success.
func helpShown(err error) error {
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

func dlqLs(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags, fp *lsFlags) error {
	args, err := positional(fs, inv, 0, 1)
	if err != nil {
		return helpShown(err)
	}
	f := *fp
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		if f.status != "" || f.errorClass != "" || f.text != "" || f.group != "" || f.limit != 0 || f.cursor != "" {
			return usageErrorf("--status, --error-class, --q, --group, --limit and --cursor list the entries of one DLQ: redrive dlq ls DLQ [flags]")
		}
		var out struct {
			DLQs []admin.DLQ `json:"dlqs"`
		}
		return c.get(ctx, inv, "", nil, f.json, &out, func() error { return renderDLQs(inv.stdout, out.DLQs) })
	}
	q := url.Values{}
	for k, v := range map[string]string{"status": f.status, "error_class": f.errorClass, "q": f.text, "group": f.group, "cursor": f.cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.limit != 0 {
		q.Set("limit", strconv.Itoa(f.limit))
	}
	var out struct {
		Entries    []admin.Entry `json:"entries"`
		NextCursor string        `json:"next_cursor"`
	}
	return c.get(ctx, inv, "/"+url.PathEscape(args[0]), q, f.json, &out, func() error {
		if err := renderEntries(inv.stdout, out.Entries); err != nil {
			return err
		}
		if out.NextCursor != "" {
			fmt.Fprintf(inv.stdout, "# more entries: repeat with --cursor %s\n", out.NextCursor)
		}
		return nil
	})
}

// get GETs path and prints the answer: as the server's JSON (indented)
// with asJSON, else by decoding it into out and calling render.
func (c *adminClient) get(ctx context.Context, inv *invocation, path string, q url.Values, asJSON bool, out any, render func() error) error {
	if asJSON {
		var raw json.RawMessage
		if err := c.do(ctx, http.MethodGet, path, q, nil, &raw); err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return fmt.Errorf("indent the answer: %w", err)
		}
		buf.WriteByte('\n')
		_, err := inv.stdout.Write(buf.Bytes())
		return err
	}
	if err := c.do(ctx, http.MethodGet, path, q, nil, out); err != nil {
		return err
	}
	return render()
}

func dlqShow(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags, asJSON *bool) error {
	args, err := positional(fs, inv, 2, 2)
	if err != nil {
		return helpShown(err)
	}
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	var d admin.Detail
	return c.get(ctx, inv, "/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), nil, *asJSON, &d,
		func() error { return renderDetail(inv.stdout, d) })
}

func dlqReplay(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags) error {
	args, err := positional(fs, inv, 2, 2)
	if err != nil {
		return helpShown(err)
	}
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	var out struct {
		Entry admin.Entry `json:"entry"`
	}
	body := map[string]string{"topic": args[0], "id": args[1]}
	if err := c.do(ctx, http.MethodPost, "/replay", nil, body, &out); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "replayed %s/%s to %s (status %s)\n", printable(args[0]), printable(args[1]), printable(dashed(out.Entry.ReplayDestination)), printable(string(out.Entry.Status)))
	return nil
}

func dlqDiscard(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags, reasonFlag *string) error {
	args, err := positional(fs, inv, 2, 2)
	if err != nil {
		return helpShown(err)
	}
	reason := *reasonFlag
	if strings.TrimSpace(reason) == "" {
		return usageErrorf("--reason is required: say why the entry is discarded (it goes to the audit log)")
	}
	c, err := newAdminClient(inv, *a)
	if err != nil {
		return err
	}
	var out struct {
		Entry admin.Entry `json:"entry"`
	}
	path := "/" + url.PathEscape(args[0]) + "/" + url.PathEscape(args[1])
	if err := c.do(ctx, http.MethodDelete, path, nil, map[string]string{"reason": reason}, &out); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "discarded %s/%s (status %s)\n", printable(args[0]), printable(args[1]), printable(string(out.Entry.Status)))
	return nil
}

func dlqReplayAll(ctx context.Context, inv *invocation, fs *flag.FlagSet, a *adminFlags, fp *replayAllFlags) error {
	args, err := positional(fs, inv, 1, 1)
	if err != nil {
		return helpShown(err)
	}
	f := *fp
	if f.poll <= 0 {
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
	if err := c.do(ctx, http.MethodPost, "/replay-all", q, nil, &out); err != nil {
		return err
	}
	job, err := followJob(ctx, inv, c, out.Job, f.poll)
	if err != nil {
		return err
	}
	p := job.Progress
	fmt.Fprintf(inv.stdout, "replay-all of %s %s: %d replayed, %d skipped, %d failed, %d mismatched of %d (job %s)\n",
		printable(job.DLQ), printable(job.State), p.Replayed, p.Skipped, p.Failed, p.Mismatched, p.Total, printable(job.ID))
	if job.State != "done" {
		return fmt.Errorf("replay-all job %s %s: %s", job.ID, job.State, dashed(oneLine(job.Error, 0)))
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
