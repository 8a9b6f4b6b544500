package console

import (
	"context"
	"html/template"
	"net/url"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/svgchart"
	"github.com/redrive/redrive/internal/timeseries"
	"github.com/redrive/redrive/lag"
)

// LagHistory gives the recent lag for the lag page's charts;
// *lag.Sampler implements it. A LagSource that does not implement it
// gets a page without charts.
type LagHistory interface {
	History() lag.History
}

// WorkerHistory gives the recent instances by state for the workers
// page's chart; *heartbeat.Sampler implements it. A WorkerSource that
// does not implement it gets a page without the chart.
type WorkerHistory interface {
	History() heartbeat.History
}

// Arrival chart ranges: the range= parameter of the DLQ page.
const (
	rangeDay  = "24h"
	rangeWeek = "7d"
)

// chartGroups is how many failure groups an arrivals chart shows by
// name; the rest stack as "other groups".
const chartGroups = 6

// History charts span at least historySamples sample intervals (30
// minutes at the default 30 s), else minHistorySpan.
const (
	historySamples = 60
	minHistorySpan = time.Minute
)

// arrivalsView is the DLQ page's arrivals chart.
type arrivalsView struct {
	Range      string       // rangeDay or rangeWeek
	Day, Week  template.URL // the links of the two ranges
	Chart      template.HTML
	Total      int64
	GroupCount int // groups named in the chart
}

// readRange reads the range= parameter: rangeDay when absent.
func readRange(v url.Values) (string, error) {
	r, err := one(v, "range")
	switch {
	case err != nil:
		return "", err
	case r == "":
		return rangeDay, nil
	case r == rangeDay || r == rangeWeek:
		return r, nil
	}
	return "", bad("range", "%.20q is not %s or %s", r, rangeDay, rangeWeek)
}

// arrivals draws the arrivals of name over rng, stacked by failure group
// (the busiest chartGroups by name, labelled from labels, by
// fingerprint); with group, those of that group only.
func (c *Console) arrivals(ctx context.Context, name, group, rng string, now time.Time, labels map[string]string) (arrivalsView, error) {
	q, unit := dlq.ArrivalsDay(name, now), "dead letters / hour"
	if rng == rangeWeek {
		q, unit = dlq.ArrivalsWeek(name, now), "dead letters / 6 hours"
	}
	q.Groups, q.Group = chartGroups, group
	a, err := c.ops.Arrivals(ctx, q)
	if err != nil {
		return arrivalsView{}, err
	}
	base := "/dlq/" + pathEscape(name) + "?range="
	if group != "" {
		base = "/dlq/" + pathEscape(name) + "?" + url.Values{"group": {group}}.Encode() + "&range="
	}
	v := arrivalsView{Range: rng, GroupCount: len(a.Groups),
		Day: template.URL(base + rangeDay), Week: template.URL(base + rangeWeek)} // #nosec: built from escaped parts
	rest := append([]int64(nil), a.Counts...)
	var series []timeseries.Series
	for _, g := range a.Groups {
		label := labels[g.Fingerprint]
		if label == "" {
			label = "group " + g.Fingerprint[:min(8, len(g.Fingerprint))]
		}
		series = append(series, bucketSeries(q, label, g.Counts))
		for i, n := range g.Counts {
			rest[i] -= n
		}
	}
	for _, n := range a.Counts {
		v.Total += n
	}
	if other := bucketSeries(q, "other groups", rest); len(other.Points) > 0 || len(series) == 0 {
		series = append(series, other)
	}
	period, by := "last 24 hours", ", by failure group"
	if rng == rangeWeek {
		period = "last 7 days"
	}
	if group != "" {
		by = ", of this failure group"
	}
	title := "Dead-letter arrivals, " + period + by
	v.Chart = chartHTML(svgchart.Chart{ID: "arrivals-chart", Title: title, Unit: unit, Kind: svgchart.StackedBars,
		From: q.Since, To: q.Until(), Step: q.Step, Series: series})
	return v, nil
}

// bucketSeries is counts as a series of points at the starts of q's
// buckets (zeros left out).
func bucketSeries(q dlq.ArrivalsQuery, name string, counts []int64) timeseries.Series {
	s := timeseries.Series{Name: name}
	for i, n := range counts {
		if n > 0 {
			s.Points = append(s.Points, timeseries.Point{T: q.Since.Add(time.Duration(i) * q.Step), V: float64(n)})
		}
	}
	return s
}

// historyWindow returns the start of the time axis of history charts
// sampled every interval: their oldest point, at least historySamples
// intervals (and minHistorySpan) before now.
func historyWindow(now time.Time, interval time.Duration, series ...[]timeseries.Series) time.Time {
	from := now.Add(-max(historySamples*interval, minHistorySpan))
	for _, ss := range series {
		for _, s := range ss {
			if len(s.Points) > 0 && s.Points[0].T.Before(from) {
				from = s.Points[0].T
			}
		}
	}
	return from
}

// lagCharts draws the lag history (nil without one).
func (c *Console) lagCharts(now time.Time, broker string, groups, depths bool) []template.HTML {
	hs, ok := c.cfg.Lag.(LagHistory)
	if !ok {
		return nil
	}
	h := hs.History()
	from := historyWindow(now, h.Interval, h.GroupRecords, h.GroupSeconds, h.QueueMessages)
	var out []template.HTML
	add := func(id, title, unit string, s []timeseries.Series) {
		out = append(out, chartHTML(svgchart.Chart{ID: id, Title: title, Unit: unit, From: from, To: now, Step: h.Interval, Series: s}))
	}
	if groups {
		add("lag-records-chart", broker+" consumer lag per group, in records", "records", h.GroupRecords)
		add("lag-seconds-chart", broker+" consumer lag per group, in seconds", "seconds", h.GroupSeconds)
	}
	if depths {
		add("queue-depth-chart", broker+" messages ready per queue", "messages", h.QueueMessages)
	}
	return out
}

// stateColors are the worker chart's colours: the console's severity
// colours.
var stateColors = map[string]string{
	heartbeat.StateOK: "#2e7d32", heartbeat.StateWarning: "#e69f00", heartbeat.StateCritical: "#c62828",
	heartbeat.StateMissing: "#6a1b9a", heartbeat.StatePaused: "#0072b2", heartbeat.StateUnknown: "#888888",
}

// workersChart draws the instances by state ("" without a history).
func (c *Console) workersChart(now time.Time) template.HTML {
	hs, ok := c.cfg.Workers.(WorkerHistory)
	if !ok {
		return ""
	}
	h := hs.History()
	return chartHTML(svgchart.Chart{ID: "workers-chart", Title: "Worker instances by state", Unit: "instances",
		From: historyWindow(now, h.Interval, h.States), To: now, Step: h.Interval, Series: h.States, Colors: stateColors})
}

// chartHTML marks a chart's SVG safe: svgchart escapes every text it
// draws.
func chartHTML(c svgchart.Chart) template.HTML {
	return template.HTML(c.SVG()) // #nosec: svgchart escapes names and titles
}

// groupLabels names the groups' series by fingerprint: error class and
// normalised message.
func groupLabels(groups []groupRow) map[string]string {
	labels := make(map[string]string, len(groups))
	for _, g := range groups {
		labels[g.Fingerprint] = g.ErrorClass + " " + g.Message
	}
	return labels
}
