// Package svgchart draws the console's charts as server-rendered SVG: a
// time axis, a value axis labelled with its unit, and lines or stacked
// bars, one colour per series with a legend. No script, no external
// resource, no inline style (the console's Content-Security-Policy
// allows none): only SVG presentation attributes. Series names and
// titles come from configuration and messages, so they are untrusted:
// they are clipped and HTML-escaped. The output depends only on the
// Chart, so tests can assert on its structure.
package svgchart

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/internal/timeseries"
)

// Kind is how a chart draws its series.
type Kind int

const (
	// Lines draws each series as a line through its points (a dot for a
	// lone point).
	Lines Kind = iota
	// StackedBars draws one bar per Chart.Step bucket, the series stacked.
	StackedBars
)

// Geometry, in SVG user units (pixels at scale 1): the chart is drawn for
// a 1280 px wide page and scales with it.
const (
	Width        = 1180
	Height       = 280
	marginLeft   = 72
	marginRight  = 250
	marginTop    = 34
	marginBottom = 44
	// MaxSeries is how many series a chart draws; the rest are named as
	// left out under the legend.
	MaxSeries = 10
	// maxName is the longest series name shown, in runes.
	maxName = 34
)

// palette is colour-blind-friendly (Okabe-Ito, then greys).
var palette = []string{"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000", "#999999", "#6b4c9a"}

// Chart is one chart.
type Chart struct {
	// ID is the svg element's id (a constant of the caller, not escaped
	// beyond HTML attribute escaping); empty: none.
	ID string
	// Title is drawn above the plot and is the chart's accessible name.
	Title string
	// Unit labels the value axis, e.g. "dead letters / hour".
	Unit string
	// Kind says how the series are drawn.
	Kind Kind
	// From and To are the time axis' ends (UTC is shown).
	From, To time.Time
	// Step is the width of a bar's bucket (StackedBars, required there;
	// a point at T counts in the bucket starting at T), or the sampling
	// interval of Lines: a line breaks where two points are more than
	// two steps apart. Zero for Lines: never breaks.
	Step time.Duration
	// Series are drawn in order; at most MaxSeries of them.
	Series []timeseries.Series
	// Colors, when set, gives a series' colour by name (else the palette,
	// by position).
	Colors map[string]string
}

// plot is the plotting area.
type plot struct {
	x0, y0, w, h float64 // top-left corner and size
	from, to     time.Time
	top          float64 // value at the top of the plot
}

func (p plot) x(t time.Time) float64 {
	span := p.to.Sub(p.from)
	if span <= 0 {
		return p.x0
	}
	return p.x0 + p.w*float64(t.Sub(p.from))/float64(span)
}

func (p plot) y(v float64) float64 { return p.y0 + p.h - p.h*v/p.top }

// SVG renders c. It never fails: an empty chart, one point or all zeros
// draw the axes (0 to 1) and say so.
func (c Chart) SVG() string {
	series := c.Series
	var leftOut int
	if len(series) > MaxSeries {
		series, leftOut = series[:MaxSeries], len(series)-MaxSeries
	}
	from, to := c.From.UTC(), c.To.UTC()
	if !to.After(from) {
		to = from.Add(time.Hour)
	}
	p := plot{x0: marginLeft, y0: marginTop, w: Width - marginLeft - marginRight, h: Height - marginTop - marginBottom, from: from, to: to}
	var stacks map[int64]float64
	var peak float64
	points := 0
	if c.Kind == StackedBars && c.Step > 0 {
		stacks = map[int64]float64{}
		for _, s := range series {
			for _, pt := range s.Points {
				if pt.T.Before(from) || !pt.T.Before(to) {
					continue
				}
				stacks[c.bucket(pt.T)] += pt.V
				points++
			}
		}
		for _, v := range stacks {
			peak = max(peak, v)
		}
	} else {
		for _, s := range series {
			for _, pt := range s.Points {
				if !pt.T.Before(from) && !pt.T.After(to) {
					peak = max(peak, pt.V)
					points++
				}
			}
		}
	}
	ticks := valueTicks(peak)
	p.top = ticks[len(ticks)-1]

	var b strings.Builder
	label := esc(c.Title)
	fmt.Fprintf(&b, `<svg class="chart"%s width="100%%" viewBox="0 0 %d %d" preserveAspectRatio="xMinYMin meet" role="img" aria-label="%s" font-family="sans-serif" font-size="13" xmlns="http://www.w3.org/2000/svg">`,
		idAttr(c.ID), Width, Height, label)
	fmt.Fprintf(&b, `<title>%s</title>`, label)
	fmt.Fprintf(&b, `<text class="chart-title" x="%d" y="20" font-size="15" font-weight="bold">%s</text>`, marginLeft, label)

	// Value axis: gridlines, tick labels, unit.
	b.WriteString(`<g class="y-axis">`)
	for _, v := range ticks {
		y := p.y(v)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%[2]s" stroke="#ddd"/>`, num(p.x0), num(y), num(p.x0+p.w))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, num(p.x0-6), num(y+4), formatValue(v))
	}
	fmt.Fprintf(&b, `<text class="axis-label" transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text>`, num(p.y0+p.h/2), esc(c.Unit))
	b.WriteString(`</g>`)

	// Time axis: ticks at round times, and what it is.
	b.WriteString(`<g class="x-axis">`)
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%[2]s" stroke="#333"/>`, num(p.x0), num(p.y0+p.h), num(p.x0+p.w))
	every, layout := timeTicks(to.Sub(from))
	for t := from.Truncate(every); !t.After(to); t = t.Add(every) {
		if t.Before(from) {
			continue
		}
		x := p.x(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%[1]s" y2="%s" stroke="#333"/>`, num(x), num(p.y0+p.h), num(p.y0+p.h+5))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, num(x), num(p.y0+p.h+19), t.Format(layout))
	}
	fmt.Fprintf(&b, `<text class="axis-label" x="%s" y="%d" text-anchor="middle">time (UTC)</text>`, num(p.x0+p.w/2), Height-4)
	b.WriteString(`</g>`)

	// The data.
	b.WriteString(`<g class="data">`)
	if c.Kind == StackedBars && c.Step > 0 {
		c.bars(&b, p, series)
	} else {
		c.lines(&b, p, series)
	}
	b.WriteString(`</g>`)
	if points == 0 {
		fmt.Fprintf(&b, `<text class="no-data" x="%s" y="%s" text-anchor="middle" fill="#777">no data in this period</text>`, num(p.x0+p.w/2), num(p.y0+p.h/2))
	}

	// Legend.
	b.WriteString(`<g class="legend">`)
	lx := p.x0 + p.w + 16
	for i, s := range series {
		y := p.y0 + 8 + float64(i)*19
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="12" height="12" fill="%s"/>`, num(lx), num(y-10), c.color(i, s.Name))
		fmt.Fprintf(&b, `<text x="%s" y="%s">%s<title>%s</title></text>`, num(lx+18), num(y), esc(clipName(s.Name)), esc(s.Name))
	}
	if leftOut > 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#777">+%d more not shown</text>`, num(lx), num(p.y0+8+float64(len(series))*19), leftOut)
	}
	b.WriteString(`</g></svg>`)
	return b.String()
}

// bucket returns the index of the Step bucket t falls in, from From.
func (c Chart) bucket(t time.Time) int64 { return int64(t.Sub(c.From) / c.Step) }

func (c Chart) color(i int, name string) string {
	if col, ok := c.Colors[name]; ok {
		return esc(col)
	}
	return palette[i%len(palette)]
}

// bars draws a stacked bar per bucket, series in order from the bottom.
func (c Chart) bars(b *strings.Builder, p plot, series []timeseries.Series) {
	base := map[int64]float64{}
	for i, s := range series {
		col := c.color(i, s.Name)
		for _, pt := range s.Points {
			if pt.T.Before(p.from) || !pt.T.Before(p.to) || pt.V <= 0 {
				continue
			}
			k := c.bucket(pt.T)
			start := c.From.UTC().Add(time.Duration(k) * c.Step)
			x0, x1 := p.x(start), p.x(start.Add(c.Step))
			w := max(1, (x1-x0)*0.8)
			y0, y1 := p.y(base[k]), p.y(base[k]+pt.V)
			base[k] += pt.V
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s %s: %s</title></rect>`,
				num(x0+(x1-x0-w)/2), num(y1), num(w), num(max(1, y0-y1)), col, esc(clipName(s.Name)), start.Format("Jan 2 15:04"), formatValue(pt.V))
		}
	}
}

// lines draws each series as polylines, broken at gaps of more than two
// Steps, with a dot on its newest point; a lone point is a dot.
func (c Chart) lines(b *strings.Builder, p plot, series []timeseries.Series) {
	for i, s := range series {
		col := c.color(i, s.Name)
		var run []timeseries.Point
		flush := func() {
			switch len(run) {
			case 0:
			case 1:
				fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, num(p.x(run[0].T)), num(p.y(run[0].V)), col)
			default:
				fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, col)
				for j, pt := range run {
					if j > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(num(p.x(pt.T)) + "," + num(p.y(pt.V)))
				}
				b.WriteString(`"/>`)
			}
			run = run[:0]
		}
		for _, pt := range s.Points {
			if pt.T.Before(p.from) || pt.T.After(p.to) {
				continue
			}
			if n := len(run); n > 0 && c.Step > 0 && pt.T.Sub(run[n-1].T) > 2*c.Step {
				flush()
			}
			run = append(run, pt)
		}
		if n := len(run); n > 1 { // the newest value, visible however short the line
			fmt.Fprintf(b, `<circle class="last" cx="%s" cy="%s" r="3.5" fill="%s"/>`, num(p.x(run[n-1].T)), num(p.y(run[n-1].V)), col)
		}
		flush()
	}
}

// valueTicks returns the value axis' ticks from 0: 4 or 5 round steps
// covering peak (0 to 1 when peak is 0).
func valueTicks(peak float64) []float64 {
	if !(peak > 0) || math.IsInf(peak, 0) {
		peak = 1
	}
	raw := peak / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	ticks := []float64{0}
	for v := step; ; v += step {
		ticks = append(ticks, v)
		if v >= peak*(1-1e-9) {
			return ticks
		}
	}
}

// timeTicks returns the time axis' tick interval and label layout for
// a span.
func timeTicks(span time.Duration) (time.Duration, string) {
	switch {
	case span <= 30*time.Minute:
		return 5 * time.Minute, "15:04"
	case span <= 3*time.Hour:
		return 30 * time.Minute, "15:04"
	case span <= 8*time.Hour:
		return time.Hour, "15:04"
	case span <= 26*time.Hour:
		return 3 * time.Hour, "15:04"
	default:
		return 24 * time.Hour, "Mon Jan 2"
	}
}

// formatValue prints a value axis number: 1.5k, 2M, 0.25.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	default:
		return trim(v)
	}
}

func trim(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// num prints a coordinate with one decimal.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(strings.ToValidUTF8(s, "\uFFFD")) }

func idAttr(id string) string {
	if id == "" {
		return ""
	}
	return ` id="` + esc(id) + `"`
}

// clipName shortens a series name for the legend.
func clipName(s string) string {
	if utf8.RuneCountInString(s) <= maxName {
		return s
	}
	r := []rune(s)
	return string(r[:maxName-1]) + "…"
}
