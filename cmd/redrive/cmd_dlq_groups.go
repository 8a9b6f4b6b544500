package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/dlq/admin"
)

func newDLQGroupsCmd() *cobra.Command {
	var a adminFlags
	var limit int
	var output *outputFormat
	cmd := &cobra.Command{
		Use:   "groups DLQ",
		Short: "List the failure groups of a DLQ: its dead letters grouped by cause",
		Long: `Prints the failure groups of DLQ, most pending first: dead letters of one
error class, one worker and one error message once numbers, ids, UUIDs,
hexadecimal and quoted values are set aside. Each with its count, pending
count, first and last arrival, arrivals over the last 24 hours, a sample
entry, and the fingerprint that 'redrive dlq ls DLQ --group FP' and
'redrive dlq replay-all DLQ --group FP' take. --output json prints the
server's JSON.

` + dlqHelp,
		Args:              exactArgs(1),
		ValidArgsFunction: completeDLQ,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dlqGroups(cmd.Context(), newInvocation(cmd, args), a, limit, output)
		},
	}
	a.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 0, "at most `N` groups (default 100, at most 500)")
	output = addOutputFlag(cmd)
	return cmd
}

func dlqGroups(ctx context.Context, inv *invocation, a adminFlags, limit int, output *outputFormat) error {
	c, err := newAdminClient(inv, a)
	if err != nil {
		return err
	}
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Groups []admin.Group `json:"groups"`
	}
	return c.get(ctx, inv, "/"+url.PathEscape(inv.args[0])+"/groups", q, output.json(), &out,
		func() error { return renderGroups(inv.stdout, out.Groups) })
}

// sparkBars are the bars of a text sparkline, lowest first.
var sparkBars = []rune("▁▂▃▄▅▆▇█")

// textSparkline draws counts as one bar each, a space for none.
func textSparkline(counts []int64) string {
	var top int64
	for _, n := range counts {
		top = max(top, n)
	}
	if top == 0 {
		return strings.Repeat(" ", len(counts))
	}
	var b strings.Builder
	for _, n := range counts {
		switch {
		case n == 0:
			b.WriteRune(' ')
		default:
			b.WriteRune(sparkBars[(n*int64(len(sparkBars)-1)+top-1)/top])
		}
	}
	return b.String()
}

// renderGroups writes the group table of `dlq groups`.
func renderGroups(w io.Writer, groups []admin.Group) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FINGERPRINT\tCOUNT\tPENDING\tFIRST SEEN\tLAST SEEN\tLAST 24H\tWORKER\tERROR CLASS\tMESSAGE\tSAMPLE")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(g.Fingerprint), g.Count, g.Pending,
			g.FirstSeen.UTC().Format(time.RFC3339), g.LastSeen.UTC().Format(time.RFC3339), textSparkline(g.Hourly),
			dashed(oneLine(g.Worker, 0)), dashed(oneLine(g.ErrorClass, 0)), dashed(oneLine(g.Message, 72)), printable(g.SampleID))
	}
	return tw.Flush()
}
