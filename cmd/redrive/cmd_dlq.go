package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/internal/preview"
	"github.com/spf13/cobra"
)

const dlqHelp = `Talks to the admin API of 'redrive serve': --server (default http:// +
admin.listen), with the bearer token --token, else $REDRIVE_ADMIN_TOKEN,
else admin.token. The audit log names whom the token belongs to (its
entry in admin.operators; the single admin.token is "admin"); --actor
NAME is recorded beside that name ("alice (as NAME)"), never instead of
it ('redrive admin whoami' shows who the server takes you for). An answer
4xx (bad request, unknown entry, not pending, a viewer's change) exits
with status 2 and the server's message; 5xx or an unreachable server
exits with status 1.`

// newDLQCmd is redrive dlq: the dead letters, through the admin API.
func newDLQCmd() *cobra.Command {
	return newGroupCmd("dlq", "Inspect, replay and discard dead letters through the admin API",
		newDLQLsCmd(), newDLQShowCmd(), newDLQReplayCmd(), newDLQReplayAllCmd(), newDLQDiscardCmd(),
		newDLQDiscardAllCmd(), newDLQGroupsCmd(), newDLQJobsCmd(), newDLQCancelCmd())
}

func newDLQLsCmd() *cobra.Command {
	var a adminFlags
	var f lsFlags
	cmd := &cobra.Command{
		Use:     "ls [DLQ]",
		Aliases: []string{"list"},
		Short:   "List the DLQs with their counts, or the entries of one DLQ",
		Long: `Without DLQ: every DLQ with its counts by status. With DLQ: its entries,
newest first, one page (--limit, default 50, at most 500); the next page is
--cursor as printed. Filters: --status, --error-class, --q (text in the
error message, any case), --group (a failure group's fingerprint, as
'redrive dlq groups DLQ' prints it). --output json prints the server's
JSON.

` + dlqHelp,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: completeDLQ,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqLs(cmd.Context(), newInvocation(cmd, args), a, f)
		},
	}
	a.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.status, "status", "", "only entries in `STATUS` (pending, replaying, replayed, discarded, archived)")
	addFilterFlags(cmd, &f.filters)
	fs.IntVar(&f.limit, "limit", 0, "at most `N` entries (default 50, at most 500)")
	fs.StringVar(&f.cursor, "cursor", "", "continue at `CURSOR` (printed after a full page)")
	f.output = addOutputFlag(cmd)
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
		[]string{"pending", "replaying", "replayed", "discarded", "archived"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newDLQShowCmd() *cobra.Command {
	var a adminFlags
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "show DLQ ID",
		Short: "Show one dead letter: payload, headers, error and audit trail",
		Long: `Prints the entry, its key, headers, payload (JSON indented), stack trace
and audit trail; --output json prints the server's JSON.

` + dlqHelp,
		Args:              exactArgs(2),
		ValidArgsFunction: completeDLQ,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqShow(cmd.Context(), newInvocation(cmd, args), a, output)
		},
	}
	a.register(cmd)
	output = addOutputFlag(cmd)
	return cmd
}

func newDLQReplayCmd() *cobra.Command {
	var a adminFlags
	var asStored bool
	cmd := &cobra.Command{
		Use:   "replay DLQ ID",
		Short: "Replay one dead letter to the worker that gave up on it",
		Long: `Republishes the entry byte for byte to its destination, the worker that
gave up on it (RabbitMQ: its queue <topic>.<worker>; Kafka: its retry topic
<topic>.retry.<worker>; a worker declared foreign: <topic> itself, which
every group of the topic receives), waits for the broker's confirm and
marks it replayed, with an audit row naming the destination. It prints the
destination as the console and the audit log name it.

An entry whose original message is unknown (stored raw, reason
unparseable: what it holds is the dead-letter record, not the message) is
refused; --as-stored sends its stored bytes as they are, audited as
replay_as_stored.

` + dlqHelp,
		Args:              exactArgs(2),
		ValidArgsFunction: completeDLQ,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqReplay(cmd.Context(), newInvocation(cmd, args), a, asStored)
		},
	}
	a.register(cmd)
	cmd.Flags().BoolVar(&asStored, "as-stored", false, "send the stored bytes of an entry whose original message is unknown as they are (audited as replay_as_stored)")
	return cmd
}

func newDLQDiscardCmd() *cobra.Command {
	var a adminFlags
	var reason string
	cmd := &cobra.Command{
		Use:               "discard DLQ ID --reason TEXT",
		Short:             "Discard one dead letter, with a reason (audited)",
		Long:              "Marks the entry discarded; --reason is required and goes to the audit log.\n\n" + dlqHelp,
		Args:              exactArgs(2),
		ValidArgsFunction: completeDLQ,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqDiscard(cmd.Context(), newInvocation(cmd, args), a, reason)
		},
	}
	a.register(cmd)
	addReasonFlag(cmd, &reason, "the entry is discarded")
	return cmd
}

// filters are the flags that select entries of a DLQ: dlq ls, replay-all
// and discard-all take them.
type filters struct {
	errorClass, text, group string
}

// addFilterFlags defines --error-class, --q and --group on cmd.
func addFilterFlags(cmd *cobra.Command, f *filters) {
	fs := cmd.Flags()
	fs.StringVar(&f.errorClass, "error-class", "", "only entries of error `CLASS`")
	fs.StringVar(&f.text, "q", "", "only entries whose error message contains `TEXT`")
	fs.StringVar(&f.group, "group", "", "only entries of the failure group `FINGERPRINT` (see redrive dlq groups)")
}

// query sets the filters on q, as the admin API names them.
func (f filters) query(q url.Values) {
	for k, v := range map[string]string{"error_class": f.errorClass, "q": f.text, "group": f.group} {
		if v != "" {
			q.Set(k, v)
		}
	}
}

type lsFlags struct {
	filters
	status, cursor string
	limit          int
	output         *outputFormat
}

func dlqLs(ctx context.Context, inv *invocation, a adminFlags, f lsFlags) error {
	args := inv.args
	c, err := newAdminClient(inv, a)
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
		return c.get(ctx, inv, "", nil, f.output.json(), &out, func() error { return renderDLQs(inv.stdout, out.DLQs) })
	}
	q := url.Values{}
	f.filters.query(q)
	for k, v := range map[string]string{"status": f.status, "cursor": f.cursor} {
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
	return c.get(ctx, inv, "/"+url.PathEscape(args[0]), q, f.output.json(), &out, func() error {
		if err := renderEntries(inv.stdout, out.Entries); err != nil {
			return err
		}
		if out.NextCursor != "" {
			fmt.Fprintf(inv.stdout, "# more entries: repeat with --cursor %s\n", out.NextCursor)
		}
		return nil
	})
}

// get GETs path and prints the answer: as the server's JSON with asJSON
// (indented, levels deeper than preview.MaxDepth compact: a payload
// nested 10,000 deep prints as its size, not as 200 MB of indentation),
// else by decoding it into out and calling render.
func (c *adminClient) get(ctx context.Context, inv *invocation, path string, q url.Values, asJSON bool, out any, render func() error) error {
	return c.fetch(ctx, inv, "/internal/v1/dlq"+path, q, asJSON, out, render)
}

// fetch is get for any path of the API (/internal/v1/…).
func (c *adminClient) fetch(ctx context.Context, inv *invocation, path string, q url.Values, asJSON bool, out any, render func() error) error {
	if asJSON {
		var raw []byte
		if err := c.call(ctx, http.MethodGet, path, q, nil, &raw); err != nil {
			return err
		}
		if _, ok := preview.Scan(raw); !ok {
			return fmt.Errorf("the answer of GET %s is not JSON", printable(path))
		}
		return preview.Indent(inv.stdout, raw)
	}
	if err := c.call(ctx, http.MethodGet, path, q, nil, out); err != nil {
		return err
	}
	return render()
}

func dlqShow(ctx context.Context, inv *invocation, a adminFlags, output *outputFormat) error {
	args := inv.args
	c, err := newAdminClient(inv, a)
	if err != nil {
		return err
	}
	var d admin.Detail
	return c.get(ctx, inv, "/"+url.PathEscape(args[0])+"/"+url.PathEscape(args[1]), nil, output.json(), &d,
		func() error { return renderDetail(inv.stdout, d) })
}

func dlqReplay(ctx context.Context, inv *invocation, a adminFlags, asStored bool) error {
	args := inv.args
	c, err := newAdminClient(inv, a)
	if err != nil {
		return err
	}
	var out struct {
		Entry admin.Entry `json:"entry"`
	}
	body := map[string]any{"topic": args[0], "id": args[1]}
	if asStored {
		body["as_stored"] = true
	}
	if err := c.do(ctx, http.MethodPost, "/replay", nil, body, &out); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.code == admin.CodeUnknownMessage {
			return usageErrorf("refused: %s (HTTP %d); rerun with --as-stored to send its stored bytes as they are", ae.msg, ae.status)
		}
		return err
	}
	verb := "replayed"
	if asStored && out.Entry.MessageUnknown {
		verb = "replayed as stored"
	}
	fmt.Fprintf(inv.stdout, "%s %s/%s to %s (status %s)\n", verb, printable(args[0]), printable(args[1]), printable(dashed(out.Entry.ReplayDestination)), printable(string(out.Entry.Status)))
	return nil
}

func dlqDiscard(ctx context.Context, inv *invocation, a adminFlags, reason string) error {
	args := inv.args
	if strings.TrimSpace(reason) == "" {
		return usageErrorf("--reason is required: say why the entry is discarded (it goes to the audit log)")
	}
	c, err := newAdminClient(inv, a)
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
