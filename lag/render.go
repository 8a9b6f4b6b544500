package lag

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// RenderGroups writes the topic table of `redrive lag` for a Kafka report,
// then one line per group that could not be measured.
//
//	GROUP            TOPIC            PARTITIONS  MEMBERS  LAG  LAG AGE  LEVEL  STATUS  REASON
//	payout-executor  escrow.commands  3           1        12   4s       OK     OK      -
func RenderGroups(w io.Writer, r GroupReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITIONS\tMEMBERS\tLAG\tLAG AGE\tLEVEL\tSTATUS\tREASON")
	for _, t := range r.Topics {
		parts := strconv.Itoa(t.Partitions)
		if t.Errors > 0 {
			parts += fmt.Sprintf(" (%d unknown)", t.Errors)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n",
			t.Group, t.Topic, parts, t.Members, t.Lag, age(t.TimeLag, t.TimeLagKnown), t.Level, t.Status, dash(t.Reason))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lag: render: %w", err)
	}
	return renderGroupErrors(w, r.GroupErrors)
}

// RenderPartitions writes one line per partition of a Kafka report.
//
//	GROUP            TOPIC            PARTITION  COMMITTED  END  LAG  LAG AGE  MEMBER    STATUS  REASON
//	payout-executor  escrow.commands  0          40         52   12   4s       worker-1  OK      -
func RenderPartitions(w io.Writer, r GroupReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tLAG AGE\tMEMBER\tSTATUS\tREASON")
	for _, p := range r.Partitions {
		lag, reason := strconv.FormatInt(p.Lag, 10), p.Reason
		if p.Err != nil {
			lag, reason = "?", p.Err.Error()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n",
			p.Group, p.Topic, p.Partition, offset(p.Committed), p.End, lag,
			age(p.TimeLag, p.TimeLagKnown), dash(p.Member), p.Status, dash(reason))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lag: render: %w", err)
	}
	return renderGroupErrors(w, r.GroupErrors)
}

func renderGroupErrors(w io.Writer, errs map[string]error) error {
	groups := make([]string, 0, len(errs))
	for g := range errs {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	for _, g := range groups {
		if _, err := fmt.Fprintf(w, "group %s: not measured: %v\n", g, errs[g]); err != nil {
			return fmt.Errorf("lag: render: %w", err)
		}
	}
	return nil
}

// RenderDepths writes the queue table of `redrive lag` for RabbitMQ.
//
//	QUEUE                            STATE    READY  CONSUMERS
//	escrow.commands.payout-executor  ok       12     2
//	redrive.delay.4000               missing  -      -
func RenderDepths(w io.Writer, depths []QueueDepth) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tSTATE\tREADY\tCONSUMERS")
	for _, d := range depths {
		if !d.Exists {
			fmt.Fprintf(tw, "%s\tmissing\t-\t-\n", d.Queue)
			continue
		}
		fmt.Fprintf(tw, "%s\tok\t%d\t%d\n", d.Queue, d.Messages, d.Consumers)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lag: render: %w", err)
	}
	return nil
}

func age(d time.Duration, known bool) string {
	if !known {
		return "-"
	}
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
