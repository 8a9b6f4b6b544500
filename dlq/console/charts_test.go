package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/lag"
)

// TestArrivalsChart: the DLQ page opens on a chart of its arrivals,
// stacked by failure group (a group's hostile error message escaped),
// with links between the 24 h and 7 d ranges; a group's listing shows
// the group's arrivals; a bad range is a 400 naming it; another filtered
// listing shows no chart.
func TestArrivalsChart(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t), nil)
			recs := f.insert(3, func(i int, r *dlq.Record) {
				r.Entry.ErrorMessage = `<script>alert(1)</script> failed ` + string(rune('0'+i))
				r.ReceivedAt = time.Now().Add(-time.Duration(i) * 30 * time.Hour) // now, 30 h and 60 h ago
			})
			c := f.client().login(viewerToken)
			base := "/dlq/" + f.dlq
			for _, tc := range []struct {
				path string
				want []string
			}{
				{base, []string{`id="arrivals-chart"`, "last 24 hours, by failure group", "dead letters / hour", "time (UTC)",
					"1 dead letter in the last 24 hours", `href="` + base + `?range=7d"`, "&lt;script&gt;"}},
				{base + "?range=7d", []string{`id="arrivals-chart"`, "last 7 days", "dead letters / 6 hours",
					"3 dead letters in the last 7 days", `aria-current="true" class="current">last 7 days`}},
			} {
				r := c.get(tc.path)
				expect(t, tc.path, r, http.StatusOK, tc.want...)
				if strings.Contains(r.body, "<script>alert") {
					t.Errorf("%s: an error message reached the page unescaped", tc.path)
				}
			}
			// A group's entries come below its own arrivals.
			group := base + "?group=" + recs[0].Fingerprint
			expect(t, "a group's entries", c.get(group+"&range=7d"), http.StatusOK, `id="arrivals-chart"`,
				"last 7 days, of this failure group", `href="`+base+`?group=`+recs[0].Fingerprint+`&amp;range=24h"`, "3 dead letters")
			expect(t, "bad range", c.get(base+"?range=1y"), http.StatusBadRequest, "range")
			if r := c.get(base + "?status=pending"); strings.Contains(r.body, "arrivals-chart") {
				t.Error("a filtered listing shows the arrivals chart")
			}
		})
	}
}

// history stands for the samplers' histories.
type history struct {
	lagSource
	workerSource
}

func (history) History() lag.History {
	now := time.Now()
	return lag.History{Interval: time.Minute,
		GroupRecords: []lag.Series{{Name: "billing<b>", Points: []lag.Point{{T: now.Add(-2 * time.Minute), V: 40}, {T: now.Add(-time.Minute), V: 42}}}},
		GroupSeconds: []lag.Series{{Name: "billing<b>", Points: []lag.Point{{T: now.Add(-time.Minute), V: 3}}}}}
}

type workerHistory struct{ workerSource }

func (workerHistory) History() heartbeat.History {
	now := time.Now()
	return heartbeat.History{Interval: time.Minute, States: []heartbeat.Series{
		{Name: heartbeat.StateOK, Points: []heartbeat.Point{{T: now.Add(-time.Minute), V: 2}, {T: now, V: 1}}},
		{Name: heartbeat.StateMissing, Points: []heartbeat.Point{{T: now.Add(-time.Minute), V: 0}, {T: now, V: 1}}},
	}}
}

// TestHistoryCharts: the lag page draws the sampler's lag history in
// records and seconds, the workers page the instances by state; sources
// without a history get the pages without charts.
func TestHistoryCharts(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.Lag = history{}
		cfg.Workers = workerHistory{}
	})
	c := f.client().login(viewerToken)
	r := c.get("/lag")
	expect(t, "lag", r, http.StatusOK, `id="lag-records-chart"`, `id="lag-seconds-chart"`, ">records<", ">seconds<", "billing&lt;b&gt;", "<polyline", "<circle")
	if strings.Contains(r.body, "billing<b>") {
		t.Error("a group name reached the lag page unescaped")
	}
	expect(t, "workers", c.get("/workers"), http.StatusOK, `id="workers-chart"`, ">instances<", ">OK<", ">MISSING<", `fill="#6a1b9a"`)

	plain := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.Lag = lagSource{}
		cfg.Workers = workerSource{}
	}).client().login(viewerToken)
	for _, path := range []string{"/lag", "/workers"} {
		if r := plain.get(path); r.status != http.StatusOK || strings.Contains(r.body, "<svg class=\"chart\"") {
			t.Errorf("%s without a history: %d, chart drawn: %v", path, r.status, strings.Contains(r.body, "<svg"))
		}
	}
}
