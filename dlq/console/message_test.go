package console_test

import (
	"bytes"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
)

// TestOriginMismatch: an entry claiming another worker's origin is marked in
// the table and on its page, has no replay button, is refused with 409, and
// replay-all leaves it pending and counts it.
func TestOriginMismatch(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	recs := f.insert(2, func(i int, r *dlq.Record) {
		if i == 1 {
			r.Entry.Worker = "payouts" // not a configured worker of orders
		}
	})
	c := f.client().login(opToken)
	r := c.get("/dlq/" + f.dlq)
	expect(t, "entries", r, http.StatusOK, `class="badge mismatch"`, "origin mismatch")
	if strings.Count(r.body, `class="badge mismatch"`) != 1 {
		t.Errorf("%d entries marked, want 1", strings.Count(r.body, `class="badge mismatch"`))
	}
	r = c.get("/dlq/" + f.dlq + "/" + recs[1].ID)
	expect(t, "mismatched entry", r, http.StatusOK, `id="refused"`, "Origin mismatch", html.EscapeString(`worker "payouts"`), "orders.retry.billing")
	if strings.Contains(r.body, `id="replay"`) {
		t.Error("the mismatched entry has a replay button")
	}
	expect(t, "routed entry", c.get("/dlq/"+f.dlq+"/"+recs[0].ID), http.StatusOK, `id="replay"`, "Replay to topic orders.retry.billing (worker billing)", `id="destination">topic orders.retry.billing (worker billing)`)
	expect(t, "replay of the mismatched entry", c.post("/dlq/"+f.dlq+"/"+recs[1].ID+"/replay", nil), http.StatusConflict,
		"replay refused", "origin mismatch", html.EscapeString(`"payouts"`))

	r = c.post("/dlq/"+f.dlq+"/replay-all", url.Values{"rate": {"0"}})
	id, ok := strings.CutPrefix(r.location, "/jobs/")
	if r.status != http.StatusSeeOther || !ok {
		t.Fatalf("replay-all = %d %q: %s", r.status, r.location, clip(r.body))
	}
	deadline := time.Now().Add(30 * time.Second)
	for j, _ := f.srv.Jobs().Job(id); j.State == dlq.JobRunning; j, _ = f.srv.Jobs().Job(id) {
		if time.Now().After(deadline) {
			t.Fatalf("job still running: %+v", j)
		}
		time.Sleep(10 * time.Millisecond)
	}
	expect(t, "job", c.get(r.location), http.StatusOK, `id="job-state">done<`, `id="job-mismatched">1 `, `id="job-replayed">1 of 2`)
	if got := get(t, f, recs[1].ID); got.Status != dlq.StatusPending {
		t.Errorf("the mismatched entry is %s after replay-all, want pending", got.Status)
	}
}

func get(t *testing.T, f *fixture, id string) dlq.Record {
	t.Helper()
	r, err := f.store.Get(t.Context(), f.dlq, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLargePayload: the entry page shows the preview and links to the whole
// payload, which downloads raw; headers of the exact form show with their
// types and the properties.
func TestLargePayload(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	big := []byte(strings.Repeat("0123456789", 30_000)) // 300 kB, preview 1 KiB
	wf, err := wire.Encode(wire.Form{Headers: wire.Table{{Name: "attempts", Value: int16(3)}, {Name: "bin\xff", Value: []byte{0, 1}}},
		Props: &wire.Properties{ContentType: "text/plain", Expiration: "60000"}})
	if err != nil {
		t.Fatal(err)
	}
	recs := f.insert(2, func(i int, r *dlq.Record) {
		if i == 0 {
			r.Entry.OriginalValue, r.Entry.OriginalWire = big, wf
		} else {
			r.Entry.OriginalValue = nil
		}
	})
	v := f.client().login(viewerToken)
	r := v.get("/dlq/" + f.dlq)
	expect(t, "entries", r, http.StatusOK, "300000 B")
	r = v.get("/dlq/" + f.dlq + "/" + recs[0].ID)
	expect(t, "entry", r, http.StatusOK, `id="payload-cut"`, "300000 bytes", `id="download"`,
		`href="/dlq/`+f.dlq+`/`+recs[0].ID+`/payload"`, "int16", ">3<", "62696eff", "(hex)", `id="properties"`, "text/plain", "60000")
	if len(r.body) > 64<<10 {
		t.Errorf("the entry page is %d bytes for a 1 KiB preview", len(r.body))
	}
	d := v.get("/dlq/" + f.dlq + "/" + recs[0].ID + "/payload")
	if d.status != http.StatusOK || !bytes.Equal([]byte(d.body), big) || d.header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(d.header.Get("Content-Disposition"), "attachment;") || d.header.Get("Content-Length") != strconv.Itoa(len(big)) {
		t.Errorf("download = %d, %d bytes, headers %v", d.status, len(d.body), d.header)
	}
	if d := v.get("/dlq/" + f.dlq + "/" + recs[1].ID + "/payload"); d.status != http.StatusNoContent {
		t.Errorf("download of no payload = %d, want 204", d.status)
	}
	expect(t, "download of an unknown entry", v.get("/dlq/"+f.dlq+"/0-999/payload"), http.StatusNotFound)
	if d := f.client().get("/dlq/" + f.dlq + "/" + recs[0].ID + "/payload"); d.status != http.StatusSeeOther || !strings.HasPrefix(d.location, "/login") {
		t.Errorf("download without a session = %d %q, want a redirect to the login page", d.status, d.location)
	}
}
