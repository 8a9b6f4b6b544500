package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/console"
)

// TestEntryTraceLink (issue 18): the entry page shows the trace id of a
// valid W3C traceparent header, linked through Config.TraceLink; an
// invalid traceparent (a message is untrusted) shows no trace at all, and
// its text is only ever escaped in the headers table.
func TestEntryTraceLink(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.TraceLink = "https://tempo.example/trace/{trace_id}?orgId=1"
	})
	hostile := `00-"><script>alert(1)</script>-00f067aa0ba902b7-01`
	parents := []string{
		"00-" + id + "-00f067aa0ba902b7-01",                       // valid
		"00-" + strings.ToUpper(id) + "-00f067aa0ba902b7-01",      // uppercase: invalid
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"ff-" + id + "-00f067aa0ba902b7-01",                       // version ff
		"00-" + id + "-00f067aa0ba902b7-01-extra",                 // version 00 with more
		hostile,
	}
	recs := f.insert(len(parents), func(i int, r *dlq.Record) {
		r.Entry.OriginalHeaders = map[string]string{"traceparent": parents[i]}
	})
	c := f.client().login(viewerToken)
	r := c.get("/dlq/" + f.dlq + "/" + recs[0].ID)
	expect(t, "traced entry", r, http.StatusOK, `id="trace"`,
		`<a href="https://tempo.example/trace/`+id+`?orgId=1" rel="noopener noreferrer">`+id+`</a>`)
	for i, p := range parents[1:] {
		r := c.get("/dlq/" + f.dlq + "/" + recs[i+1].ID)
		if r.status != http.StatusOK || strings.Contains(r.body, `id="trace"`) || strings.Contains(r.body, "tempo.example") {
			t.Errorf("traceparent %q: status %d, a trace is shown:\n%s", p, r.status, clip(r.body))
		}
		if strings.Contains(r.body, "<script>alert") {
			t.Errorf("traceparent %q rendered unescaped", p)
		}
	}

	plain := newFixture(t, stores[0].Open(t), nil)
	recs = plain.insert(1, func(_ int, r *dlq.Record) {
		r.Entry.OriginalHeaders = map[string]string{"traceparent": parents[0]}
	})
	r = plain.client().login(viewerToken).get("/dlq/" + plain.dlq + "/" + recs[0].ID)
	expect(t, "traced entry without a link", r, http.StatusOK, `<td class="mono" id="trace">`+id+`</td>`)
}
