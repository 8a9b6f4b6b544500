package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
)

// The renderers below print what the admin API answered; every string
// that came from a message or the server goes through printable (see
// escape.go), so that a dead letter cannot drive the operator's terminal.

// renderDLQs writes the DLQ table of `dlq ls`.
func renderDLQs(w io.Writer, dlqs []admin.DLQ) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DLQ\tSEVERITY\tPENDING\tREPLAYING\tREPLAYED\tDISCARDED\tARCHIVED\tOLDEST PENDING\tRETENTION")
	for _, d := range dlqs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", printable(d.DLQ), printable(d.Severity), d.Pending, d.Replaying, d.Replayed,
			d.Discarded, d.Archived, fmtTime(d.OldestPendingAt), printable(d.Retention))
	}
	return tw.Flush()
}

// renderEntries writes the entry table of `dlq ls DLQ`.
func renderEntries(w io.Writer, entries []admin.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tRECEIVED\tREASON\tRETRIES\tREPLAYS TO\tERROR CLASS\tERROR")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", printable(e.ID), printable(string(e.Status)), e.ReceivedAt.UTC().Format(time.RFC3339),
			dashed(oneLine(e.Reason, 0)), e.RetryCount, printable(replaysTo(e)), dashed(oneLine(e.ErrorClass, 0)), dashed(oneLine(e.ErrorMessage, 72)))
	}
	return tw.Flush()
}

// replaysTo is where a replay of e goes: its destination, "ORIGIN
// MISMATCH" (refused: its recorded origin disagrees with its DLQ's
// worker) or "NO ROUTE" (no configured worker for its DLQ).
func replaysTo(e admin.Entry) string {
	switch {
	case e.OriginMismatch:
		return "ORIGIN MISMATCH"
	case e.ReplayDestination == "":
		return "NO ROUTE"
	}
	return e.ReplayDestination
}

// renderDetail writes one entry, its payload and its audit trail.
func renderDetail(w io.Writer, d admin.Detail) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", name, printable(value))
		}
	}
	field("id", d.ID)
	field("dlq", d.DLQ)
	status := string(d.Status)
	if !d.StatusChangedAt.IsZero() {
		status += " since " + d.StatusChangedAt.UTC().Format(time.RFC3339)
	}
	if d.StatusBy != "" {
		status += " by " + d.StatusBy
	}
	field("status", status)
	field("severity", d.Severity)
	field("broker", d.Broker)
	field("received", d.ReceivedAt.UTC().Format(time.RFC3339))
	field("message id", d.MessageID)
	field("topic", d.OriginalTopic)
	if d.OriginalPartition != nil && d.OriginalOffset != nil {
		field("partition/offset", fmt.Sprintf("%d/%d", *d.OriginalPartition, *d.OriginalOffset))
	}
	field("source", d.Source)
	field("replays to", d.ReplayDestination)
	if d.OriginMismatch {
		field("origin mismatch", oneLine(d.ReplayRefused, 0))
	} else {
		field("not replayable", oneLine(d.ReplayRefused, 0))
	}
	field("worker", strings.TrimSuffix(d.Worker+" ("+d.WorkerInstance+")", " ()"))
	field("reason", d.Reason)
	field("retries", fmt.Sprint(d.RetryCount))
	field("error class", d.ErrorClass)
	field("error", oneLine(d.ErrorMessage, 0))
	field("first failure", fmtTime(d.FirstFailureAt))
	field("last failure", fmtTime(d.LastFailureAt))
	if d.Key != nil {
		field("key", `"`+*d.Key+`" (`+d.KeyEncoding+")")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.Wire != nil {
		renderWire(w, *d.Wire)
	} else if len(d.Headers) > 0 {
		fmt.Fprintln(w, "headers:")
		names := make([]string, 0, len(d.Headers))
		for k := range d.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		b64 := map[string]bool{}
		for _, k := range d.HeadersBase64 {
			b64[k] = true
		}
		for _, k := range names {
			suffix := ""
			if b64[k] {
				suffix = " (base64)"
			}
			fmt.Fprintf(w, "  %s: %s%s\n", printable(k), printable(d.Headers[k]), suffix)
		}
	}
	fmt.Fprintf(w, "payload (%d bytes, %s):\n", d.PayloadBytes, printable(dashed(d.PayloadEncoding)))
	fmt.Fprintln(w, indent(printableLines(payloadText(d.Payload, d.PayloadEncoding))))
	if d.PayloadTruncated {
		fmt.Fprintf(w, "  (the first bytes of %d; the whole payload: GET %s)\n", d.PayloadBytes, printable(d.PayloadURL))
	}
	if d.StackTrace != "" {
		fmt.Fprintln(w, "stack trace:")
		fmt.Fprintln(w, indent(printableLines(d.StackTrace)))
	}
	fmt.Fprintln(w, "audit:")
	if len(d.Audit) == 0 {
		fmt.Fprintln(w, "  (none)")
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  AT\tACTOR\tACTION\tFROM\tTO\tREASON")
	for _, a := range d.Audit {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", a.At.UTC().Format(time.RFC3339), printable(a.Actor), printable(a.Action),
			printable(string(a.From)), printable(string(a.To)), dashed(oneLine(a.Reason, 0)))
	}
	return tw.Flush()
}

// renderWire writes the exact headers, with their types, and the
// properties of an entry.
func renderWire(w io.Writer, v wire.View) {
	fmt.Fprintln(w, "headers (exact, in wire order):")
	if len(v.Headers) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, h := range v.Headers {
		name := h.Name
		if h.NameEncoding != "" {
			name += " (name " + h.NameEncoding + ")"
		}
		val, _ := json.Marshal(h.Value)
		enc := ""
		if h.Encoding != "" {
			enc = ", " + h.Encoding
		}
		fmt.Fprintf(w, "  %s (%s%s): %s\n", printable(name), printable(h.Type), printable(enc), printable(string(val)))
	}
	if v.Properties != nil {
		b, _ := json.Marshal(v.Properties)
		fmt.Fprintf(w, "properties: %s\n", printable(string(b)))
	}
}

// payloadText renders a payload as the API shows it: JSON indented, text
// as is, base64 as is.
func payloadText(p json.RawMessage, enc string) string {
	switch {
	case len(p) == 0 || string(p) == "null":
		return "(none)"
	case enc == "json":
		var buf bytes.Buffer
		if json.Indent(&buf, p, "", "  ") == nil {
			return buf.String()
		}
	}
	var s string
	if json.Unmarshal(p, &s) == nil {
		if s == "" {
			return "(empty)"
		}
		return s
	}
	return string(p)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds s onto one line, cuts it to max runes (0 = no limit) and
// makes it printable.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); max > 0 && len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return printable(s)
}

// progressBar draws replay-all progress on w: a text bar redrawn in place
// on a terminal, one line per change otherwise.
type progressBar struct {
	w     io.Writer
	tty   bool
	last  string
	drawn bool
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, tty: isTerminal(w)}
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

const barWidth = 30

// progressLine renders the bar of a job.
func progressLine(j dlq.Job) string {
	p := j.Progress
	done := p.Replayed + p.Skipped + p.Failed + p.Mismatched + p.Discarded
	if j.Kind == dlq.JobDiscardAll {
		return barLine(j, done, fmt.Sprintf("discarded %d, skipped %d, failed %d", p.Discarded, p.Skipped, p.Failed))
	}
	return barLine(j, done, fmt.Sprintf("replayed %d, skipped %d, failed %d, mismatched %d", p.Replayed, p.Skipped, p.Failed, p.Mismatched))
}

// barLine renders the bar of a job with done of its entries handled and
// counts saying how.
func barLine(j dlq.Job, done int64, counts string) string {
	p := j.Progress
	if p.Total == 0 && j.State == "running" {
		return fmt.Sprintf("[%s] %d/?  %s", strings.Repeat("-", barWidth), done, counts)
	}
	filled, pct := barWidth, 100
	if p.Total > 0 {
		filled = int(min(done, p.Total) * barWidth / p.Total)
		pct = int(min(done, p.Total) * 100 / p.Total)
	}
	return fmt.Sprintf("[%s%s] %d/%d %3d%%  %s", strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), done, p.Total, pct, counts)
}

// update draws j's progress unless it did not change.
func (b *progressBar) update(j dlq.Job) {
	line := progressLine(j)
	if line == b.last {
		return
	}
	if b.tty {
		pad := max(len(b.last)-len(line), 0)
		fmt.Fprintf(b.w, "\r%s%s", line, strings.Repeat(" ", pad))
	} else {
		fmt.Fprintln(b.w, line)
	}
	b.last, b.drawn = line, true
}

// done ends the bar's line on a terminal.
func (b *progressBar) done() {
	if b.tty && b.drawn {
		fmt.Fprintln(b.w)
	}
}
