package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Markdown writes the rows as a markdown table, one line per row.
func (r *Report) Markdown(w io.Writer) error {
	var sb strings.Builder
	sb.WriteString("| scenario | broker | client | messages | msg/s | p50 | p99 | CPU/msg | msg/s per core | allocs/msg | ratio | vs best peer | target | met | notes |\n")
	sb.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|\n")
	for _, row := range r.Rows {
		ratio, peer, met := "", "", ""
		if row.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f (vs %s)", row.Ratio, row.Baseline)
		}
		if row.BestPeer != "" {
			peer = fmt.Sprintf("%.2f (vs %s)", row.VsPeer, row.BestPeer)
		}
		if row.Target != "" {
			met = "missed"
			if row.Met {
				met = "met"
			}
		}
		rate := ""
		if row.Rate > 0 {
			rate = fmt.Sprintf("%.0f", row.Rate)
		}
		perCore := ""
		if pc := row.PerCore(); pc > 0 {
			perCore = fmt.Sprintf("%.0f", pc)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %.1f | %s | %s | %s | %s | %s |\n",
			row.Scenario, row.Broker, row.Client, row.Messages, rate,
			dur(row.P50), dur(row.P99), cpu(row.CPUPerMsg), perCore, row.AllocsPerMsg, ratio, peer, row.Target, met, row.Note)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// dur renders a latency with a precision that suits its size; "" for 0.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	}
}

// cpu renders a CPU time per message in microseconds; "" for 0 (not
// measured).
func cpu(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case d <= 0:
		return ""
	case us < 10:
		return fmt.Sprintf("%.2fµs", us)
	case us < 1000:
		return fmt.Sprintf("%.1fµs", us)
	default:
		return dur(d)
	}
}

// PerCore is what one core handles at this row's CPU cost: messages per
// second of CPU time (1 s / CPUPerMsg); 0 when CPU was not measured. It is
// the process's cost, so Kafka rows against the in-process kfake count
// kfake's share too.
func (r Row) PerCore() float64 {
	if r.CPUPerMsg <= 0 {
		return 0
	}
	return float64(time.Second) / float64(r.CPUPerMsg)
}
