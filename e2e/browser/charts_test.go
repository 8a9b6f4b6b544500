package browser

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/svgchart"
	"github.com/redrive/redrive/internal/timeseries"
)

// TestChartGallery renders the console's three kinds of chart with the
// history of a two-hour incident (recorded through a bounded ring, as
// the samplers do) in Chromium at 1280 px with the console's stylesheet,
// checks that each is drawn across the page with its axis labels and
// series, and saves docs/screenshots/charts.png (REDRIVE_SCREENSHOTS=1):
// the browser test's own charts cover minutes, this one what an operator
// sees after hours.
func TestChartGallery(t *testing.T) {
	path := chromium(t)
	end := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	start := end.Add(-2 * time.Hour)
	lagRing, err := timeseries.New(timeseries.Config{})
	if err != nil {
		t.Fatal(err)
	}
	states, _ := timeseries.New(timeseries.Config{})
	for i := range 240 {
		at := start.Add(time.Duration(i) * 30 * time.Second)
		x := float64(i)
		incident := math.Max(0, 1800*math.Sin(math.Pi*(x-60)/90)) * boolf(i >= 60 && i < 150)
		lagRing.Record(at, map[string]float64{
			"payout-executor":       40 + incident + float64(i%7),
			"deal-timeout-worker":   120 + 30*math.Sin(x/10),
			"reconciliation-worker": float64(i%20) * 2,
		})
		missing := boolf(i >= 80 && i < 120)
		states.Record(at, map[string]float64{"OK": 6 - missing - boolf(i >= 100 && i < 140), "WARNING": boolf(i >= 100 && i < 140), "CRITICAL": 0,
			"MISSING": missing, "PAUSED": boolf(i >= 150 && i < 170), "UNKNOWN": 0})
	}
	weekStart := end.Add(-7 * 24 * time.Hour)
	arrivals := []timeseries.Series{{Name: "payout.BankError bank rejected transfer <n>"}, {Name: "db.Timeout query <q> timed out after <n> ms"}, {Name: "other groups"}}
	for i := range 28 {
		at := weekStart.Add(time.Duration(i) * 6 * time.Hour)
		arrivals[0].Points = append(arrivals[0].Points, timeseries.Point{T: at, V: float64(3 + i%4)})
		if i >= 20 && i < 23 {
			arrivals[1].Points = append(arrivals[1].Points, timeseries.Point{T: at, V: float64(140 - 30*(i-20))})
		}
		arrivals[2].Points = append(arrivals[2].Points, timeseries.Point{T: at, V: float64(i % 3)})
	}
	charts := []svgchart.Chart{
		{ID: "g-arrivals", Title: "Dead-letter arrivals, last 7 days, by failure group", Unit: "dead letters / 6 hours", Kind: svgchart.StackedBars,
			From: weekStart, To: end, Step: 6 * time.Hour, Series: arrivals},
		{ID: "g-lag", Title: "Kafka consumer lag per group, in records", Unit: "records", From: start, To: end, Step: 30 * time.Second, Series: lagRing.Series()},
		{ID: "g-workers", Title: "Worker instances by state", Unit: "instances", From: start, To: end, Step: 30 * time.Second, Series: byState(states.Series()),
			Colors: map[string]string{"OK": "#2e7d32", "WARNING": "#e69f00", "CRITICAL": "#c62828", "MISSING": "#6a1b9a", "PAUSED": "#0072b2", "UNKNOWN": "#888888"}}, // the console's
	}
	css, err := os.ReadFile(filepath.Join("..", "..", "dlq", "console", "static", "console.css"))
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	page.WriteString("<!doctype html><html><head><meta charset=utf-8><style>" + string(css) + "</style></head><body><main>")
	for _, c := range charts {
		page.WriteString(`<figure class="chart">` + c.SVG() + `</figure>`)
	}
	page.WriteString("</main></body></html>")
	file := filepath.Join(t.TempDir(), "charts.html")
	if err := os.WriteFile(file, []byte(page.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t, path)
	run(t, ctx, "open the gallery", chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.ID("g-workers")))
	for _, c := range []struct {
		sel   string
		texts []string
	}{
		{"#g-arrivals", []string{"dead letters / 6 hours", "time (UTC)", "db.Timeout", "Fri Nov 20"}},
		{"#g-lag", []string{"records", "time (UTC)", "payout-executor", "12:00", "1500"}},
		{"#g-workers", []string{"instances", "MISSING", "PAUSED"}},
	} {
		chartAt1280(t, ctx, c.sel, c.texts...)
	}
	if n := get(t, ctx, "count the bars", chromedp.Evaluate[int](`document.querySelectorAll("#g-arrivals g.data rect").length`)); n < 28 {
		t.Errorf("the arrivals chart draws %d bars, want at least one per 6 hours", n)
	}
	screenshot(t, ctx, "charts")
}

// byState orders series as heartbeat.Sampler.History does.
func byState(ss []timeseries.Series) []timeseries.Series {
	var out []timeseries.Series
	for _, st := range heartbeat.ChartStates {
		for _, s := range ss {
			if s.Name == st {
				out = append(out, s)
			}
		}
	}
	return out
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
