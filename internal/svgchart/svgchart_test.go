package svgchart_test

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/internal/svgchart"
	"github.com/redrive/redrive/internal/timeseries"
)

var t0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

func pts(step time.Duration, vs ...float64) []timeseries.Point {
	out := make([]timeseries.Point, len(vs))
	for i, v := range vs {
		out[i] = timeseries.Point{T: t0.Add(time.Duration(i) * step), V: v}
	}
	return out
}

// count returns how many start tags of name the SVG has, failing t when
// it is not well-formed XML.
func count(t *testing.T, svg, name string) int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	n := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == name {
			n++
		}
	}
}

func TestChart(t *testing.T) {
	hostile := `<script>alert("x")</script>&`
	for _, tc := range []struct {
		name     string
		chart    svgchart.Chart
		contains []string
		absent   []string
		rects    int // data bars (legend squares and the title's excluded: see below)
		lines    int // polylines
		dots     int // circles
		lastDots int // dots on the newest point of a line: lines unless the last run is a lone point
	}{
		{
			name: "empty",
			chart: svgchart.Chart{Title: "Arrivals", Unit: "dead letters / hour", Kind: svgchart.StackedBars,
				From: t0, To: t0.Add(24 * time.Hour), Step: time.Hour},
			contains: []string{"no data in this period", "dead letters / hour", "time (UTC)", ">00:00<", ">03:00<", `>0<`, `>1<`},
		},
		{
			name: "all zero",
			chart: svgchart.Chart{Title: "Lag", Unit: "records", From: t0, To: t0.Add(time.Hour), Step: time.Minute,
				Series: []timeseries.Series{{Name: "g", Points: pts(time.Minute, 0, 0, 0)}}},
			contains: []string{"records", ">1<"},
			absent:   []string{"no data"},
			lines:    1,
		},
		{
			name: "one point",
			chart: svgchart.Chart{Title: "Lag", Unit: "seconds", From: t0, To: t0.Add(time.Hour),
				Series: []timeseries.Series{{Name: "g", Points: pts(time.Minute, 7)}}},
			contains: []string{"seconds", ">8<"},
			dots:     1,
		},
		{
			name: "stacked bars over a week",
			chart: svgchart.Chart{Title: "Arrivals", Unit: "dead letters / 6 hours", Kind: svgchart.StackedBars,
				From: t0, To: t0.Add(7 * 24 * time.Hour), Step: 6 * time.Hour,
				Series: []timeseries.Series{
					{Name: "timeout", Points: pts(6*time.Hour, 3, 0, 12000)},
					{Name: "closed", Points: pts(6*time.Hour, 1, 2)},
				}},
			contains: []string{"Thu Nov 26", "Wed Dec 2", "15k", ">timeout<", ">closed<"},
			rects:    4, // zeros draw nothing
		},
		{
			name: "gap breaks a line",
			chart: svgchart.Chart{Title: "Lag", Unit: "records", From: t0, To: t0.Add(time.Hour), Step: time.Minute,
				Series: []timeseries.Series{{Name: "g", Points: []timeseries.Point{
					{T: t0, V: 1}, {T: t0.Add(time.Minute), V: 2}, {T: t0.Add(30 * time.Minute), V: 3}}}}},
			lines:    1,
			dots:     1,
			lastDots: -1,
		},
		{
			name: "untrusted names escaped",
			chart: svgchart.Chart{Title: hostile, Unit: hostile, From: t0, To: t0.Add(time.Hour),
				Series: []timeseries.Series{{Name: hostile, Points: pts(time.Minute, 1, 2)}}},
			contains: []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;"},
			absent:   []string{"<script"},
			lines:    1,
		},
		{
			name: "long names clipped, too many series named",
			chart: func() svgchart.Chart {
				c := svgchart.Chart{Title: "Lag", Unit: "records", From: t0, To: t0.Add(time.Hour)}
				for i := range svgchart.MaxSeries + 2 {
					c.Series = append(c.Series, timeseries.Series{Name: strings.Repeat("n", 40) + string(rune('a'+i)), Points: pts(time.Minute, 1, 2)})
				}
				return c
			}(),
			contains: []string{"+2 more not shown", strings.Repeat("n", 33) + "…<title>"},

			lines: svgchart.MaxSeries,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := tc.chart.SVG()
			if svg != tc.chart.SVG() {
				t.Error("two renders of one chart differ")
			}
			for _, s := range tc.contains {
				if !strings.Contains(svg, s) {
					t.Errorf("lacks %q:\n%s", s, svg)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(svg, s) {
					t.Errorf("has %q", s)
				}
			}
			legend := min(len(tc.chart.Series), svgchart.MaxSeries)
			if got := count(t, svg, "rect") - legend; got != tc.rects {
				t.Errorf("%d bars, want %d", got, tc.rects)
			}
			if got := count(t, svg, "polyline"); got != tc.lines {
				t.Errorf("%d lines, want %d", got, tc.lines)
			}
			if got := count(t, svg, "circle") - strings.Count(svg, `<circle class="last"`); got != tc.dots {
				t.Errorf("%d dots, want %d", got, tc.dots)
			}
			want := tc.lines
			if tc.lastDots < 0 {
				want = 0
			}
			if got := strings.Count(svg, `<circle class="last"`); tc.chart.Kind == svgchart.Lines && got != want {
				t.Errorf("%d newest-value dots, want %d (one per series ending in a line)", got, want)
			}
			if count(t, svg, "title") < 1 || !strings.Contains(svg, `role="img"`) {
				t.Error("no accessible title")
			}
		})
	}
}
