// One file, over the usual length: TestAPI walks the API in order on one
// fixture (each step leaves the state the next one reads).

package admin_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

// TestAPI runs every route over each store.
func TestAPI(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				fn   func(t *testing.T, f *fixture)
			}{
				{"ListDLQs", testListDLQs},
				{"ListEntries", testListEntries},
				{"ListBadParams", testListBadParams},
				{"Show", testShow},
				{"Replay", testReplay},
				{"ReplayUnknownMessage", testReplayUnknownMessage},
				{"Discard", testDiscard},
				{"ReplayAll", testReplayAll},
				{"Routing", testRouting},
				{"HostileInput", testHostileInput},
			} {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, newFixture(t, st.Open(t))) })
			}
		})
	}
}

func testListDLQs(t *testing.T, f *fixture) {
	recs := f.insert("orders.billing.dlq", 3, nil)
	f.insert("orders.dlq", 1, func(_ int, r *dlq.Record) { r.Broker = "kafka"; r.Severity = string(broker.SeverityInfo) })
	expect(t, f.do("DELETE", "/internal/v1/dlq/orders.billing.dlq/"+recs[0].ID+"?reason=x", ""), http.StatusOK, "")
	m := expect(t, f.do("GET", "/internal/v1/dlq", ""), http.StatusOK, "")
	list, _ := m["dlqs"].([]any)
	if len(list) != 3 {
		t.Fatalf("dlqs = %v, want empty.dlq, orders.billing.dlq, orders.dlq", m["dlqs"])
	}
	byName := map[string]map[string]any{}
	for _, d := range list {
		d := d.(map[string]any)
		byName[d["dlq"].(string)] = d
	}
	if d := byName["orders.billing.dlq"]; d["pending"] != 2.0 || d["discarded"] != 1.0 || d["severity"] != "warning" || d["broker"] != "rabbitmq" || d["configured"] != false {
		t.Errorf("orders.billing.dlq = %v", d)
	}
	if d := byName["orders.dlq"]; d["pending"] != 1.0 || d["severity"] != "info" || d["broker"] != "kafka" || d["retention"] != "720h0m0s" {
		t.Errorf("orders.dlq = %v", d)
	}
	if d := byName["empty.dlq"]; d["pending"] != 0.0 || d["severity"] != "critical" || d["retention"] != "forever" || d["configured"] != true {
		t.Errorf("empty.dlq = %v", d)
	}
	expect(t, f.do("GET", "/internal/v1/dlq?x=1", ""), http.StatusBadRequest, "x")
}

// entryIDs returns the ids of a listing response.
func entryIDs(t *testing.T, m map[string]any) []string {
	t.Helper()
	list, ok := m["entries"].([]any)
	if !ok {
		t.Fatalf("no entries in %v", m)
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.(map[string]any)["id"].(string)
	}
	return out
}

func testListEntries(t *testing.T, f *fixture) {
	recs := f.insert("list.dlq", 7, func(i int, r *dlq.Record) {
		if i%2 == 1 {
			r.Entry.ErrorClass = "db.Timeout"
			r.Entry.ErrorMessage = "Connection RESET by peer"
		}
	})
	expect(t, f.do("DELETE", "/internal/v1/dlq/list.dlq/"+recs[0].ID+"?reason=x", ""), http.StatusOK, "")

	// Paging, newest first by default, over more than one page.
	var got []string
	target := "/internal/v1/dlq/list.dlq?limit=3"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		m := expect(t, f.do("GET", target, ""), http.StatusOK, "")
		ids := entryIDs(t, m)
		if len(ids) > 3 {
			t.Fatalf("page of %d entries with limit 3", len(ids))
		}
		got = append(got, ids...)
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		target = "/internal/v1/dlq/list.dlq?limit=3&cursor=" + url.QueryEscape(next)
	}
	want := make([]string, 0, 7)
	for i := 6; i >= 0; i-- {
		want = append(want, recs[i].ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paged listing = %v, want %v", got, want)
	}
	// A listing entry has no payload but its size.
	m := expect(t, f.do("GET", "/internal/v1/dlq/list.dlq?limit=1&order=oldest", ""), http.StatusOK, "")
	e := m["entries"].([]any)[0].(map[string]any)
	if e["id"] != recs[0].ID || e["status"] != "discarded" || e["payload_bytes"] != 7.0 || e["payload"] != nil || e["status_by"] != "ops-team" {
		t.Errorf("oldest entry = %v", e)
	}

	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"status=pending&order=oldest", []int{1, 2, 3, 4, 5, 6}},
		{"status=discarded", []int{0}},
		{"status=replayed", nil},
		{"error_class=db.Timeout&order=oldest", []int{1, 3, 5}},
		{"q=connection+reset&order=oldest", []int{1, 3, 5}},
		{"since=2025-01-15T10:00:05Z&order=oldest", []int{5, 6}},
		{"until=2025-01-15T10:00:02Z&order=oldest", []int{0, 1}},
		{"since=2025-01-15T10:00:01%2B00:00&until=2025-01-15T10:00:04.5Z&error_class=db.Timeout&status=pending&order=oldest", []int{1, 3}},
	} {
		m := expect(t, f.do("GET", "/internal/v1/dlq/list.dlq?"+tc.query, ""), http.StatusOK, "")
		var want []string
		for _, i := range tc.want {
			want = append(want, recs[i].ID)
		}
		if got := entryIDs(t, m); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("?%s = %v, want %v", tc.query, got, want)
		}
	}
	// A configured DLQ without entries is an empty list; an unknown one 404.
	m = expect(t, f.do("GET", "/internal/v1/dlq/empty.dlq", ""), http.StatusOK, "")
	if ids := entryIDs(t, m); len(ids) != 0 {
		t.Errorf("empty.dlq lists %v", ids)
	}
	expect(t, f.do("GET", "/internal/v1/dlq/unknown.dlq", ""), http.StatusNotFound, "")
	// A known DLQ with no match is an empty list, not a 404.
	expect(t, f.do("GET", "/internal/v1/dlq/list.dlq?status=archived", ""), http.StatusOK, "")
}

func testListBadParams(t *testing.T, f *fixture) {
	f.insert("bad.dlq", 3, nil)
	m := expect(t, f.do("GET", "/internal/v1/dlq/bad.dlq?limit=1", ""), http.StatusOK, "")
	newest, _ := m["next_cursor"].(string)
	for _, tc := range []struct{ query, param string }{
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"limit=-1", "limit"},
		{"limit=abc", "limit"},
		{"limit=1e3", "limit"},
		{"limit=99999999999999999999", "limit"},
		{"cursor=garbage", "cursor"},
		{"cursor=" + url.QueryEscape("1' OR '1'='1"), "cursor"},
		{"cursor=" + url.QueryEscape(newest) + "&order=oldest", "cursor"},
		{"since=yesterday", "since"},
		{"since=2025-01-15", "since"},
		{"until=2025-13-45T99:00:00Z", "until"},
		{"since=2025-01-15T10:00:00Z&until=2025-01-15T09:00:00Z", "since"},
		{"status=lost", "status"},
		{"status=PENDING", "status"},
		{"order=up", "order"},
		{"foo=bar", "foo"},
		{"limit=1&limit=2", "limit"},
		{"q=" + strings.Repeat("x", 1100), "q"},
		{"%zz", "query"},
	} {
		expect(t, f.do("GET", "/internal/v1/dlq/bad.dlq?"+tc.query, ""), http.StatusBadRequest, tc.param)
	}
}

func testShow(t *testing.T, f *fixture) {
	recs := f.insert("show.dlq", 4, func(i int, r *dlq.Record) {
		switch i {
		case 1:
			r.Entry.OriginalValue = []byte("plain text é")
			r.Entry.OriginalKey = nil
		case 2:
			r.Entry.OriginalValue = []byte{0xff, 0x00, 0x01}
			r.Entry.OriginalKey = []byte{0xfe}
			r.Entry.OriginalHeaders = map[string]string{"bin": "\xff", "ok": "v"}
		case 3:
			r.Entry.OriginalValue = nil
			r.Entry.OriginalHeaders = nil
		}
	})
	f.pub.set(func(p *publisher) { p.fail = errors.New("no route") })
	expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"show.dlq","id":"`+recs[0].ID+`"}`), http.StatusBadGateway, "")
	f.pub.set(func(p *publisher) { p.fail = nil })
	expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"show.dlq","id":"`+recs[0].ID+`"}`, "Authorization", bearerOf("alice")), http.StatusOK, "")

	m := expect(t, f.do("GET", "/internal/v1/dlq/show.dlq/"+recs[0].ID, ""), http.StatusOK, "")
	if m["payload_encoding"] != "json" || m["payload"].(map[string]any)["n"] != 0.0 || m["key"] != "key-0" || m["key_encoding"] != "utf8" {
		t.Errorf("json payload shown as %v (%v), key %v", m["payload"], m["payload_encoding"], m["key"])
	}
	if h := m["headers"].(map[string]any); h["content-type"] != "application/json" {
		t.Errorf("headers = %v", h)
	}
	if m["status"] != "replayed" || m["source"] != "orders.billing" || m["error_class"] != "payout.BankError" || m["retry_count"] != 5.0 {
		t.Errorf("entry = %v", m)
	}
	audit := m["audit"].([]any)
	if len(audit) != 2 || audit[0].(map[string]any)["action"] != "replay_failed" || audit[1].(map[string]any)["action"] != "replay" ||
		audit[1].(map[string]any)["actor"] != "alice" || !strings.Contains(audit[0].(map[string]any)["reason"].(string), "no route") {
		t.Errorf("audit = %v", audit)
	}

	m = expect(t, f.do("GET", "/internal/v1/dlq/show.dlq/"+recs[1].ID, ""), http.StatusOK, "")
	if m["payload_encoding"] != "utf8" || m["payload"] != "plain text é" || m["key"] != nil {
		t.Errorf("text payload shown as %v (%v), key %v", m["payload"], m["payload_encoding"], m["key"])
	}
	if a, ok := m["audit"].([]any); !ok || len(a) != 0 {
		t.Errorf("audit of an untouched entry = %v, want []", m["audit"])
	}

	m = expect(t, f.do("GET", "/internal/v1/dlq/show.dlq/"+recs[2].ID, ""), http.StatusOK, "")
	raw, _ := base64.StdEncoding.DecodeString(m["payload"].(string))
	if m["payload_encoding"] != "base64" || string(raw) != "\xff\x00\x01" || m["key_encoding"] != "base64" || m["key"] != "/g==" {
		t.Errorf("binary payload shown as %v (%v), key %v (%v)", m["payload"], m["payload_encoding"], m["key"], m["key_encoding"])
	}
	if h := m["headers"].(map[string]any); h["bin"] != "/w==" || h["ok"] != "v" || len(m["headers_base64"].([]any)) != 1 {
		t.Errorf("headers = %v, base64 %v", h, m["headers_base64"])
	}

	m = expect(t, f.do("GET", "/internal/v1/dlq/show.dlq/"+recs[3].ID, ""), http.StatusOK, "")
	if v, ok := m["payload"]; !ok || v != nil || m["payload_encoding"] != nil {
		t.Errorf("nil payload shown as %v (%v)", m["payload"], m["payload_encoding"])
	}

	expect(t, f.do("GET", "/internal/v1/dlq/show.dlq/nope", ""), http.StatusNotFound, "")
	expect(t, f.do("GET", "/internal/v1/dlq/other.dlq/"+recs[0].ID, ""), http.StatusNotFound, "")
	expect(t, f.do("GET", "/internal/v1/dlq/show.dlq/"+recs[0].ID+"?x=1", ""), http.StatusBadRequest, "x")
}

func testReplay(t *testing.T, f *fixture) {
	recs := f.insert("rp.dlq", 2, nil)
	body := `{"topic":"rp.dlq","id":"` + recs[0].ID + `"}`
	m := expect(t, f.do("POST", "/internal/v1/dlq/replay", body), http.StatusOK, "")
	if e := m["entry"].(map[string]any); e["status"] != "replayed" || e["id"] != recs[0].ID {
		t.Errorf("replay answered %v", m)
	}
	if f.pub.count() != 1 {
		t.Errorf("%d republished, want 1", f.pub.count())
	}
	expect(t, f.do("POST", "/internal/v1/dlq/replay", body), http.StatusConflict, "")
	expect(t, f.do("DELETE", "/internal/v1/dlq/rp.dlq/"+recs[0].ID+"?reason=late", ""), http.StatusConflict, "")
	expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"rp.dlq","id":"nope"}`), http.StatusNotFound, "")

	for _, tc := range []struct{ body, param string }{
		{"", "body"},
		{"   ", "body"},
		{"not json", "body"},
		{`[1,2]`, "body"},
		{`{"topic":"rp.dlq"}`, "id"},
		{`{"id":"` + recs[1].ID + `"}`, "topic"},
		{`{"topic":"rp.dlq","id":5}`, "id"},
		{`{"topic":"rp.dlq","id":"x","extra":1}`, "extra"},
		{`{"topic":"rp.dlq","id":"x"} {}`, "body"},
		{`{"topic":"../../etc","id":"x"}`, "topic"},
		{`{"topic":"rp.dlq","id":"1' OR '1'='1"}`, "id"},
		{`{"topic":"rp.dlq","id":"../../etc/passwd"}`, "id"},
	} {
		expect(t, f.do("POST", "/internal/v1/dlq/replay", tc.body), http.StatusBadRequest, tc.param)
	}
	// Over the body limit: 413, announced or not.
	big := `{"topic":"rp.dlq","id":"` + strings.Repeat("a", 70<<10) + `"}`
	expect(t, f.do("POST", "/internal/v1/dlq/replay", big), http.StatusRequestEntityTooLarge, "")
	req := strings.NewReader(big)
	w := f.doReader("POST", "/internal/v1/dlq/replay", req)
	expect(t, w, http.StatusRequestEntityTooLarge, "")
	if got, _ := f.store.Get(context.Background(), "rp.dlq", recs[1].ID); got.Status != dlq.StatusPending {
		t.Errorf("refused requests changed the entry to %s", got.Status)
	}
}

func testDiscard(t *testing.T, f *fixture) {
	recs := f.insert("ds.dlq", 4, nil)
	base := "/internal/v1/dlq/ds.dlq/"
	expect(t, f.do("DELETE", base+recs[0].ID, ""), http.StatusBadRequest, "reason")
	expect(t, f.do("DELETE", base+recs[0].ID+"?reason=++", ""), http.StatusBadRequest, "reason")
	expect(t, f.do("DELETE", base+recs[0].ID, `{"reason":""}`), http.StatusBadRequest, "reason")
	expect(t, f.do("DELETE", base+recs[0].ID+"?reason=a", `{"reason":"b"}`), http.StatusBadRequest, "reason")
	expect(t, f.do("DELETE", base+recs[0].ID+"?reason="+strings.Repeat("x", 1100), ""), http.StatusBadRequest, "reason")
	expect(t, f.do("DELETE", base+recs[0].ID, `{"why":"x"}`), http.StatusBadRequest, "why")

	m := expect(t, f.do("DELETE", base+recs[0].ID+"?reason=duplicate+of+42", ""), http.StatusOK, "")
	if e := m["entry"].(map[string]any); e["status"] != "discarded" {
		t.Errorf("discard answered %v", m)
	}
	expect(t, f.do("DELETE", base+recs[1].ID, `{"reason":"customer cancelled"}`), http.StatusOK, "")
	trail, err := f.store.Audit(context.Background(), "ds.dlq", recs[1].ID)
	if err != nil || len(trail) != 1 || trail[0].Reason != "customer cancelled" || trail[0].Action != dlq.ActionDiscard {
		t.Errorf("audit = %+v, %v", trail, err)
	}
	expect(t, f.do("DELETE", base+recs[0].ID+"?reason=again", ""), http.StatusConflict, "")
	expect(t, f.do("POST", "/internal/v1/dlq/replay", `{"topic":"ds.dlq","id":"`+recs[0].ID+`"}`), http.StatusConflict, "")
	expect(t, f.do("DELETE", base+"nope?reason=x", ""), http.StatusNotFound, "")
	if f.pub.count() != 0 {
		t.Error("a discard republished")
	}
}

// waitJob polls a job until it is no longer running.
func waitJob(t *testing.T, f *fixture, location string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := expect(t, f.do("GET", location, ""), http.StatusOK, "")
		j := m["job"].(map[string]any)
		if j["state"] != "running" {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still running: %v", j)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testReplayAll(t *testing.T, f *fixture) {
	recs := f.insert("ra.dlq", 12, func(i int, r *dlq.Record) {
		if i >= 10 {
			r.Entry.ErrorClass = "other"
		}
	})
	expect(t, f.do("DELETE", "/internal/v1/dlq/ra.dlq/"+recs[0].ID+"?reason=x", ""), http.StatusOK, "")

	w := f.do("POST", "/internal/v1/dlq/replay-all?topic=ra.dlq&error_class=payout.BankError&rate=0", "", "Authorization", bearerOf("bob"))
	m := expect(t, w, http.StatusAccepted, "")
	j := m["job"].(map[string]any)
	loc := w.Header().Get("Location")
	if loc != "/internal/v1/dlq/jobs/"+j["id"].(string) || j["dlq"] != "ra.dlq" || j["actor"] != "bob" {
		t.Fatalf("202 with job %v, Location %q", j, loc)
	}
	j = waitJob(t, f, loc)
	p := j["progress"].(map[string]any)
	if j["state"] != "done" || p["replayed"] != 9.0 || p["total"] != 9.0 || j["finished_at"] == nil {
		t.Errorf("finished job = %v", j)
	}
	if f.pub.count() != 9 {
		t.Errorf("%d republished, want 9", f.pub.count())
	}
	if trail, _ := f.store.Audit(context.Background(), "ra.dlq", recs[5].ID); len(trail) != 1 || trail[0].Actor != "bob" {
		t.Errorf("audit = %+v, want a replay by bob", trail)
	}

	// One job per DLQ at a time.
	gate := make(chan struct{})
	f.pub.set(func(p *publisher) { p.gate = gate })
	w = f.do("POST", "/internal/v1/dlq/replay-all?topic=ra.dlq", "")
	expect(t, w, http.StatusAccepted, "")
	first := w.Header().Get("Location")
	m = expect(t, f.do("POST", "/internal/v1/dlq/replay-all?topic=ra.dlq", ""), http.StatusConflict, "")
	if running := m["job"].(map[string]any); "/internal/v1/dlq/jobs/"+running["id"].(string) != first || running["state"] != "running" {
		t.Errorf("409 names job %v, want the running %s", running, first)
	}
	close(gate)
	if j := waitJob(t, f, first); j["state"] != "done" || j["progress"].(map[string]any)["replayed"] != 2.0 {
		t.Errorf("second job = %v", j)
	}

	// A failing broker fails the job.
	f.pub.set(func(p *publisher) { p.gate, p.fail = nil, errors.New("broker down") })
	more := f.insert("ra2.dlq", 2, nil)
	w = f.do("POST", "/internal/v1/dlq/replay-all?topic=ra2.dlq", "")
	expect(t, w, http.StatusAccepted, "")
	if j := waitJob(t, f, w.Header().Get("Location")); j["state"] != "failed" || !strings.Contains(j["error"].(string), "broker down") {
		t.Errorf("failed job = %v", j)
	}
	if got, _ := f.store.Get(context.Background(), "ra2.dlq", more[0].ID); got.Status != dlq.StatusPending {
		t.Errorf("entry after a failed job is %s", got.Status)
	}

	for _, tc := range []struct{ query, param string }{
		{"", "topic"},
		{"topic=", "topic"},
		{"topic=a/b", "topic"},
		{"topic=ra.dlq&rate=-1", "rate"},
		{"topic=ra.dlq&rate=abc", "rate"},
		{"topic=ra.dlq&rate=NaN", "rate"},
		{"topic=ra.dlq&rate=Inf", "rate"},
		{"topic=ra.dlq&since=never", "since"},
		{"topic=ra.dlq&status=pending", "status"},
		{"topic=ra.dlq&limit=5", "limit"},
	} {
		expect(t, f.do("POST", "/internal/v1/dlq/replay-all?"+tc.query, ""), http.StatusBadRequest, tc.param)
	}
	expect(t, f.do("POST", "/internal/v1/dlq/replay-all?topic=unknown.dlq", ""), http.StatusNotFound, "")
	expect(t, f.do("POST", "/internal/v1/dlq/replay-all?topic=ra.dlq", strings.Repeat(" ", 70<<10)), http.StatusRequestEntityTooLarge, "")
	expect(t, f.do("GET", "/internal/v1/dlq/jobs/01aaaaaaaaaaaaaaaaaaaaaaaa", ""), http.StatusNotFound, "")
	expect(t, f.do("GET", "/internal/v1/dlq/jobs/"+url.PathEscape("../x"), ""), http.StatusBadRequest, "id")
}

func testRouting(t *testing.T, f *fixture) {
	r := f.insert("rt.dlq", 1, nil)[0]
	for _, tc := range []struct {
		method, target string
		status         int
		allow          string
	}{
		{"PUT", "/internal/v1/dlq", http.StatusMethodNotAllowed, "GET"},
		{"POST", "/internal/v1/dlq", http.StatusMethodNotAllowed, "GET"},
		{"DELETE", "/internal/v1/dlq/rt.dlq", http.StatusMethodNotAllowed, "GET"},
		{"PATCH", "/internal/v1/dlq/rt.dlq/" + r.ID, http.StatusMethodNotAllowed, "GET, DELETE"},
		{"POST", "/internal/v1/dlq/rt.dlq/" + r.ID, http.StatusMethodNotAllowed, "GET, DELETE"},
		{"DELETE", "/internal/v1/dlq/replay-all", http.StatusMethodNotAllowed, "GET, POST"},
		{"PUT", "/internal/v1/dlq/jobs/abc", http.StatusMethodNotAllowed, "GET, DELETE"},
		{"GET", "/", http.StatusNotFound, ""},
		{"GET", "/internal/v1", http.StatusNotFound, ""},
		{"GET", "/internal/v1/dlq/a/b/c", http.StatusNotFound, ""},
		{"GET", "/internal/v1/dlq/replay", http.StatusNotFound, ""}, // no DLQ named "replay"
		{"GET", "/internal/v1/dlq/", http.StatusNotFound, ""},
	} {
		w := f.do(tc.method, tc.target, "")
		expect(t, w, tc.status, "")
		if got := w.Header().Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.target, got, tc.allow)
		}
	}
}

// Hostile ids, names and parameters are 400 or 404, never a 500, and
// change nothing.
func testHostileInput(t *testing.T, f *fixture) {
	r := f.insert("h.dlq", 1, nil)[0]
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/internal/v1/dlq/h.dlq/" + url.PathEscape("../../etc"), http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/h.dlq/../../etc", http.StatusNotFound},
		{"GET", "/internal/v1/dlq/h.dlq/./" + r.ID, http.StatusNotFound},
		{"GET", "/internal/v1/dlq/h.dlq/" + url.PathEscape("1' OR '1'='1"), http.StatusBadRequest},
		{"DELETE", "/internal/v1/dlq/h.dlq/" + url.PathEscape("1' OR '1'='1") + "?reason=x", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/" + url.PathEscape("h.dlq' OR '1'='1"), http.StatusNotFound},
		{"GET", "/internal/v1/dlq/" + url.PathEscape("h.dlq'; DROP TABLE dlq_entries;--"), http.StatusNotFound},
		{"GET", "/internal/v1/dlq/" + url.PathEscape("a/../b"), http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/%2e%2e", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/%00", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/h.dlq/%00", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/h.dlq?q=" + url.QueryEscape("%' OR 1=1 --"), http.StatusOK},
		{"GET", "/internal/v1/dlq/h.dlq?error_class=" + url.QueryEscape("x' OR '1'='1"), http.StatusOK},
		{"GET", "/internal/v1/dlq/h.dlq?q=%ff%fe", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/h.dlq?q=%00", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/h.dlq?error_class=%00%ff", http.StatusBadRequest},
		{"POST", "/internal/v1/dlq/replay-all?topic=h.dlq&error_class=%00", http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/" + strings.Repeat("a", 300), http.StatusBadRequest},
		{"GET", "/internal/v1/dlq/h.dlq/" + strings.Repeat("a", 200), http.StatusBadRequest},
		{"DELETE", "/internal/v1/dlq/h.dlq/" + r.ID + "?reason=x&reason=y", http.StatusBadRequest},
	} {
		w := f.do(tc.method, tc.target, "")
		if w.Code != tc.status {
			t.Errorf("%s %s = %d %s, want %d", tc.method, tc.target, w.Code, w.Body, tc.status)
		}
		if tc.status == http.StatusOK {
			if ids := entryIDs(t, decode(t, w)); len(ids) != 0 {
				t.Errorf("%s matched %v", tc.target, ids)
			}
		}
	}
	if got, err := f.store.Get(context.Background(), "h.dlq", r.ID); err != nil || got.Status != dlq.StatusPending {
		t.Errorf("entry after hostile input: %s, %v", got.Status, err)
	}
	if n, _ := f.store.Count(context.Background(), dlq.Query{}); n != 1 {
		t.Errorf("%d entries after hostile input, want 1", n)
	}
}
