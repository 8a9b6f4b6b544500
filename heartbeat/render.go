package heartbeat

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redrive/redrive/internal/termtext"
)

// Render writes rows as the table of `redrive workers`: one line per
// instance, ages relative to each row's CheckedAt, then a summary line with
// the worst severity.
//
//	TYPE             INSTANCE   STATUS   SEVERITY  LAST SEEN  LAST MESSAGE  LAG  REASON
//	payout-executor  host-4242  RUNNING  OK        3s ago     1s ago        0    -
func Render(w io.Writer, rows []WorkerStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tINSTANCE\tSTATUS\tSEVERITY\tLAST SEEN\tLAST MESSAGE\tLAG\tREASON")
	counts := map[Severity]int{}
	for _, r := range rows {
		counts[r.Severity]++
		reason := r.Reason
		if reason == "" {
			reason = "-"
		}
		lag := "-"
		if r.Status != StatusUnknown || r.Lag != 0 {
			lag = strconv.FormatInt(r.Lag, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			cell(r.Type), cell(r.Instance), cell(string(r.Status)), cell(string(r.Severity)),
			ago(r.CheckedAt, r.LastSeen), ago(r.CheckedAt, r.LastMessageAt), lag, termtext.Printable(reason))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("heartbeat: render: %w", err)
	}
	_, err := fmt.Fprintf(w, "%d instance(s): %d OK, %d WARNING, %d CRITICAL, %d UNKNOWN; worst %s\n",
		len(rows), counts[SeverityOK], counts[SeverityWarning], counts[SeverityCritical], counts[SeverityUnknown], Worst(rows))
	if err != nil {
		return fmt.Errorf("heartbeat: render: %w", err)
	}
	return nil
}

// cell is a value from Redis as a cell of the table: escaped for the
// terminal (termtext.Printable), and never empty, which would shift the
// columns.
func cell(s string) string {
	if s == "" {
		return `""`
	}
	return termtext.Printable(s)
}

// ago renders t relative to now: "-" for a zero time, "3s ago", or "in 2s"
// for a time ahead of now (a clock skew).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if now.IsZero() {
		return t.UTC().Format(time.RFC3339)
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + short(-d)
	}
	return short(d) + " ago"
}
