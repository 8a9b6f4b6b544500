package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/heartbeat"
)

func TestNewChecksConfig(t *testing.T) {
	s := stores[0].Open(t)
	ops, err := operate.New(operate.Config{Store: s, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  console.Config
		want string // "" = valid, else the field the error names
	}{
		{"no ops", console.Config{Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}}}, "Config.Ops"},
		{"no users", console.Config{Ops: ops}, "Config.Users"},
		{"empty token", console.Config{Ops: ops, Users: []console.User{{Name: "a", ReadOnly: true}}}, "Config.Users: access: Config.Credentials[0].Token: required"},
		{"short token", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: "short", ReadOnly: true}}}, "Config.Users: access: Config.Credentials[0].Token"},
		{"no name", console.Config{Ops: ops, Users: []console.User{{Token: opToken, ReadOnly: true}}}, "Config.Users: access: Config.Credentials[0].Name"},
		{"same name twice", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}, {Name: "a", Token: viewerToken, ReadOnly: true}}}, "Config.Users: access: Config.Credentials[1].Name"},
		{"operator without jobs", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken}}}, "Config.Jobs"},
		{"viewers only", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}}}, ""},
		{"trace link", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}}, TraceLink: "https://tempo.example/trace/{trace_id}"}, ""},
		{"short session secret", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}}, SessionSecret: "short"}, "Config.SessionSecret"},
		{"session secret", console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}}, SessionSecret: "0123456789abcdef0123456789abcdef"}, ""},
	} {
		if err := tc.cfg.Validate(); (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error naming %q", tc.name, err, tc.want)
		}
		if _, err := console.New(tc.cfg); (err == nil) != (tc.want == "") {
			t.Errorf("%s: New = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	// A trace link without {trace_id}, or not http(s), is refused.
	for _, link := range []string{"https://tempo.example/trace/", "javascript:alert('{trace_id}')", "ftp://x/{trace_id}", "/trace/{trace_id}"} {
		cfg := console.Config{Ops: ops, Users: []console.User{{Name: "a", Token: opToken, ReadOnly: true}}, TraceLink: link}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Config.TraceLink") {
			t.Errorf("TraceLink %q: Validate = %v, want an error naming Config.TraceLink", link, err)
		}
		if _, err := console.New(cfg); err == nil {
			t.Errorf("TraceLink %q: New accepted it", link)
		}
	}
}

func TestConsole(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t), nil)
			for _, tc := range []struct {
				name string
				fn   func(t *testing.T, f *fixture)
			}{
				{"Login", testLogin},
				{"Refused", testRefused},
				{"BadInput", testBadInput},
				{"ReplayDiscard", testReplayDiscard},
				{"ReplayAll", testReplayAll},
				{"Pages", testPages},
			} {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
			}
		})
	}
}

func testLogin(t *testing.T, f *fixture) {
	c := f.client()
	r := c.get("/dlq/" + f.dlq + "?status=pending")
	if r.status != http.StatusSeeOther || r.location != "/login?next="+url.QueryEscape("/dlq/"+f.dlq+"?status=pending") {
		t.Fatalf("GET without a session = %d %q, want a redirect to the login page", r.status, r.location)
	}
	expect(t, "login page", c.get("/login"), http.StatusOK, `name="token"`, `type="password"`)
	expect(t, "wrong token", c.post("/login", url.Values{"token": {"not-the-token"}}), http.StatusUnauthorized, "token: not a valid token")
	expect(t, "empty token", c.post("/login", url.Values{"token": {""}}), http.StatusUnauthorized, "token: not a valid token")
	expect(t, "cross-site login", c.post("/login", url.Values{"token": {opToken}}, "Origin", "http://evil.example"), http.StatusForbidden, "origin:")

	r = c.post("/login", url.Values{"token": {opToken}, "next": {"/dlq/" + f.dlq}})
	if r.status != http.StatusSeeOther || r.location != "/dlq/"+f.dlq {
		t.Fatalf("login = %d %q", r.status, r.location)
	}
	ck := r.header.Get("Set-Cookie")
	for _, want := range []string{"redrive_session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("Set-Cookie %q lacks %s", ck, want)
		}
	}
	if strings.Contains(ck, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", ck)
	}
	expect(t, "after login", c.get("/"), http.StatusOK, "alice", "Log out")
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "/\t/evil.example", "/\n/evil.example", "/\x00/evil.example"} {
		if r := f.client().post("/login", url.Values{"token": {opToken}, "next": {next}}); r.location != "/" {
			t.Errorf("login with next=%q redirects to %q, want /", next, r.location)
		}
		// Logged in, GET /login?next= redirects at once: the same check.
		if r := c.get("/login?next=" + url.QueryEscape(next)); r.status != http.StatusSeeOther || r.location != "/" {
			t.Errorf("GET /login?next=%q = %d %q, want a redirect to /", next, r.status, r.location)
		}
	}

	// Over TLS the cookie is Secure.
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "https://127.0.0.1/login", strings.NewReader("token="+opToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	f.srv.Handler().ServeHTTP(w, req)
	if ck := w.Header().Get("Set-Cookie"); w.Code != http.StatusSeeOther || !strings.Contains(ck, "Secure") {
		t.Errorf("login over TLS = %d, Set-Cookie %q, want Secure", w.Code, ck)
	}

	// Logout needs the CSRF token, then ends the session.
	expect(t, "logout without token", c.post("/logout", url.Values{"csrf": {""}}), http.StatusForbidden, "csrf:")
	r = c.post("/logout", nil)
	if r.status != http.StatusSeeOther || r.location != "/login" {
		t.Errorf("logout = %d %q", r.status, r.location)
	}
	if r := c.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("GET / after logout = %d, want a redirect to login", r.status)
	}
}

// testRefused checks that mutations without the CSRF token, from another
// origin, without a session or by a viewer are refused and change
// nothing.
func testRefused(t *testing.T, f *fixture) {
	rec := f.insert(1, nil)[0]
	op := f.client().login(opToken)
	viewer := f.client().login(viewerToken)
	anon := f.client()
	replay := "/dlq/" + f.dlq + "/" + rec.ID + "/replay"
	discard := "/dlq/" + f.dlq + "/" + rec.ID + "/discard"
	for _, tc := range []struct {
		name    string
		c       *client
		path    string
		form    url.Values
		headers []string
		want    string
	}{
		{"replay without csrf", op, replay, url.Values{"csrf": {""}}, nil, "csrf:"},
		{"replay with a wrong csrf", op, replay, url.Values{"csrf": {"forged"}}, nil, "csrf:"},
		{"replay with another session's csrf", op, replay, url.Values{"csrf": {viewer.csrf}}, nil, "csrf:"},
		{"discard without csrf", op, discard, url.Values{"csrf": {""}, "reason": {"x"}}, nil, "csrf:"},
		{"replay-all without csrf", op, "/dlq/" + f.dlq + "/replay-all", url.Values{"csrf": {""}}, nil, "csrf:"},
		{"replay from another origin", op, replay, nil, []string{"Origin", "http://evil.example"}, "origin:"},
		{"replay from a null origin", op, replay, nil, []string{"Origin", "null"}, "origin:"},
		{"replay referred by another site", op, replay, nil, []string{"Origin", "", "Referer", "http://evil.example/x"}, "origin:"},
		{"replay without a session", anon, replay, nil, nil, "session: log in first"},
		{"replay by a viewer", viewer, replay, nil, nil, "read-only: victor"},
		{"discard by a viewer", viewer, discard, url.Values{"reason": {"x"}}, nil, "read-only:"},
		{"replay-all by a viewer", viewer, "/dlq/" + f.dlq + "/replay-all", nil, nil, "read-only:"},
	} {
		expect(t, tc.name, tc.c.post(tc.path, tc.form, tc.headers...), http.StatusForbidden, tc.want)
	}
	got, trail, err := f.ops.Show(context.Background(), f.dlq, rec.ID)
	if err != nil || got.Status != dlq.StatusPending || len(trail) != 0 {
		t.Errorf("after refused posts: %s, audit %v, %v; want pending, no audit", got.Status, trail, err)
	}
	// A viewer sees no buttons.
	r := viewer.get("/dlq/" + f.dlq + "/" + rec.ID)
	expect(t, "viewer's entry page", r, http.StatusOK, rec.ID, "read-only")
	for _, no := range []string{`id="replay"`, `id="discard"`, "/replay\"", "/discard\""} {
		if strings.Contains(r.body, no) {
			t.Errorf("viewer's entry page has %s", no)
		}
	}
	if r := viewer.get("/dlq/" + f.dlq); strings.Contains(r.body, "replay-all") {
		t.Error("viewer's entries page has the replay-all form")
	}
}

func testBadInput(t *testing.T, f *fixture) {
	rec := f.insert(1, nil)[0]
	c := f.client().login(opToken)
	base := "/dlq/" + f.dlq
	for _, tc := range []struct {
		name, path string
		status     int
		want       string
	}{
		{"dlq name with a slash", "/dlq/a%2Fb", http.StatusBadRequest, "dlq:"},
		{"dlq name ..", "/dlq/%2E%2E/x", http.StatusBadRequest, "dlq:"},
		{"unknown dlq", "/dlq/nope.dlq", http.StatusNotFound, "dlq: no DLQ named nope.dlq"},
		{"bad status", base + "?status=weird", http.StatusBadRequest, "status:"},
		{"status twice", base + "?status=pending&status=replayed", http.StatusBadRequest, "status: given 2 times"},
		{"bad since", base + "?since=yesterday", http.StatusBadRequest, "since:"},
		{"bad until", base + "?until=2025-13-45", http.StatusBadRequest, "until:"},
		{"since after until", base + "?since=2025-02-01T00:00&until=2025-01-01T00:00", http.StatusBadRequest, "since: must be before until"},
		{"bad order", base + "?order=sideways", http.StatusBadRequest, "order:"},
		{"bad cursor", base + "?cursor=zzz", http.StatusBadRequest, "cursor:"},
		{"long text", base + "?q=" + strings.Repeat("x", 1100), http.StatusBadRequest, "q: longer than 1024 bytes"},
		{"bad entry id", base + "/-x", http.StatusBadRequest, "id:"},
		{"unknown entry", base + "/9-999999", http.StatusNotFound, "entry: no such entry"},
		{"bad job id", "/jobs/..x", http.StatusBadRequest, "job:"},
		{"unknown job", "/jobs/01aaaaaaaaaaaaaaaaaaaaaaaa", http.StatusNotFound, "job: no such job"},
		{"unknown page", "/nope", http.StatusNotFound, "no such page"},
	} {
		expect(t, tc.name, c.get(tc.path), tc.status, tc.want)
	}
	for _, tc := range []struct {
		name, path string
		form       url.Values
		status     int
		want       string
	}{
		{"discard without a reason", base + "/" + rec.ID + "/discard", url.Values{"reason": {"  "}}, http.StatusBadRequest, "reason: required"},
		{"discard with a long reason", base + "/" + rec.ID + "/discard", url.Values{"reason": {strings.Repeat("r", 1100)}}, http.StatusBadRequest, "reason: longer than 1024 bytes"},
		{"replay of an unknown entry", base + "/9-999999/replay", nil, http.StatusNotFound, "entry:"},
		{"replay with a bad id", base + "/-x/replay", nil, http.StatusBadRequest, "id:"},
		{"replay-all at a bad rate", base + "/replay-all", url.Values{"rate": {"-1"}}, http.StatusBadRequest, "rate:"},
		{"replay-all with a bad since", base + "/replay-all", url.Values{"since": {"soon"}}, http.StatusBadRequest, "since:"},
		{"replay-all of an unknown dlq", "/dlq/nope.dlq/replay-all", nil, http.StatusNotFound, "dlq: no DLQ named"},
		{"login with a huge form", "/login", url.Values{"token": {strings.Repeat("t", 70<<10)}}, http.StatusBadRequest, "form:"},
	} {
		expect(t, tc.name, c.post(tc.path, tc.form), tc.status, tc.want)
	}
	req, _ := http.NewRequest(http.MethodPut, f.web.URL+"/", nil)
	expect(t, "PUT /", c.do(req), http.StatusMethodNotAllowed, "PUT is not allowed here")
	if got, _ := f.store.Get(context.Background(), f.dlq, rec.ID); got.Status != dlq.StatusPending {
		t.Errorf("entry after bad input is %s", got.Status)
	}
}

func testReplayDiscard(t *testing.T, f *fixture) {
	recs := f.insert(2, nil)
	c := f.client().login(opToken)
	page := "/dlq/" + f.dlq + "/" + recs[0].ID
	expect(t, "pending entry page", c.get(page), http.StatusOK, `id="replay"`, `id="discard"`, "No action taken yet")

	r := c.post(page+"/replay", nil)
	if r.status != http.StatusSeeOther || r.location != page {
		t.Fatalf("replay = %d %q: %s", r.status, r.location, clip(r.body))
	}
	r = c.get(page)
	expect(t, "replayed entry page", r, http.StatusOK, `id="status">replayed<`, "<td>alice</td><td>replay</td><td>replaying</td><td>replayed</td>")
	if strings.Contains(r.body, `id="replay"`) {
		t.Error("a replayed entry still has the replay button")
	}
	got, trail, err := f.ops.Show(context.Background(), f.dlq, recs[0].ID)
	if err != nil || got.Status != dlq.StatusReplayed || got.StatusBy != "alice" || len(trail) != 1 || trail[0].Actor != "alice" || trail[0].Action != dlq.ActionReplay {
		t.Errorf("after replay: %s by %s, audit %+v, %v", got.Status, got.StatusBy, trail, err)
	}
	expect(t, "replay again", c.post(page+"/replay", nil), http.StatusConflict, "status: the entry is no longer pending")

	page = "/dlq/" + f.dlq + "/" + recs[1].ID
	r = c.post(page+"/discard", url.Values{"reason": {"duplicate of deal d1"}})
	if r.status != http.StatusSeeOther || r.location != page {
		t.Fatalf("discard = %d %q: %s", r.status, r.location, clip(r.body))
	}
	expect(t, "discarded entry page", c.get(page), http.StatusOK, `id="status">discarded<`, "<td>discard</td>", "duplicate of deal d1")
	got, trail, err = f.ops.Show(context.Background(), f.dlq, recs[1].ID)
	if err != nil || got.Status != dlq.StatusDiscarded || len(trail) != 1 || trail[0].Reason != "duplicate of deal d1" || trail[0].Actor != "alice" {
		t.Errorf("after discard: %s, audit %+v, %v", got.Status, trail, err)
	}
	expect(t, "discard again", c.post(page+"/discard", url.Values{"reason": {"again"}}), http.StatusConflict, "status:")
}

func testReplayAll(t *testing.T, f *fixture) {
	recs := f.insert(3, func(i int, r *dlq.Record) {
		if i == 2 {
			r.Entry.ErrorClass = "other.Error"
		}
	})
	c := f.client().login(opToken)
	expect(t, "entries page", c.get("/dlq/"+f.dlq+"?error_class=payout.BankError"), http.StatusOK, `id="replay-all"`, `name="error_class" value="payout.BankError"`)
	r := c.post("/dlq/"+f.dlq+"/replay-all", url.Values{"error_class": {"payout.BankError"}, "rate": {"0"}, "q": {""}, "since": {""}, "until": {""}})
	id, ok := strings.CutPrefix(r.location, "/jobs/")
	if r.status != http.StatusSeeOther || !ok {
		t.Fatalf("replay-all = %d %q: %s", r.status, r.location, clip(r.body))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, ok := f.srv.Jobs().Job(id)
		if !ok {
			t.Fatalf("job %s unknown", id)
		}
		if j.State != dlq.JobRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still running: %+v", j)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r = c.get(r.location)
	expect(t, "job page", r, http.StatusOK, `id="job-state">done<`, "by alice", "class payout.BankError")
	if strings.Contains(r.body, `http-equiv="refresh"`) {
		t.Error("a finished job's page still refreshes")
	}
	if got, _ := f.store.Get(context.Background(), f.dlq, recs[2].ID); got.Status != dlq.StatusPending {
		t.Errorf("entry outside the filter is %s", got.Status)
	}
	if got, _ := f.store.Get(context.Background(), f.dlq, recs[0].ID); got.Status != dlq.StatusReplayed || got.StatusBy != "alice" {
		t.Errorf("entry in the filter is %s by %s", got.Status, got.StatusBy)
	}
}

// testPages checks that every page renders its data as HTML, without
// JavaScript.
func testPages(t *testing.T, f *fixture) {
	recs := f.insert(2, func(i int, r *dlq.Record) {
		if i == 1 {
			r.Entry.OriginalValue = []byte{0x00, 0xff, 0x10, 'h', 'i'}
			r.Entry.OriginalHeaders = map[string]string{"bin": "\x00\x01"}
		}
	})
	c := f.client().login(viewerToken)
	r := c.get("/")
	expect(t, "DLQ list", r, http.StatusOK, f.dlq, "critical", "empty.dlq", "/h", `href="/static/console.css"`)
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options"} {
		if r.header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if strings.Contains(r.body, "<script") {
		t.Error("the DLQ list has a script")
	}
	expect(t, "entries", c.get("/dlq/"+f.dlq), http.StatusOK, recs[0].ID, recs[1].ID, "payout.BankError", "bank rejected transfer 0", `<option value="pending"`)
	expect(t, "filtered entries", c.get("/dlq/"+f.dlq+"?q=transfer+1&status=pending&since=2000-01-01T00:00"), http.StatusOK, recs[1].ID)
	if r := c.get("/dlq/" + f.dlq + "?q=no+such+text"); !strings.Contains(r.body, "No entries match this filter") {
		t.Errorf("text filter with no match: %s", clip(r.body))
	}
	expect(t, "empty DLQ", c.get("/dlq/empty.dlq"), http.StatusOK, "No entries")
	expect(t, "JSON entry", c.get("/dlq/"+f.dlq+"/"+recs[0].ID), http.StatusOK,
		"{\n  &#34;deal&#34;: &#34;d0&#34;,\n  &#34;amount&#34;: 12.5\n}", "trace-id", "t-0", "payout.BankError", "main.pay()",
		"max_retries", "billing-1", "deal-0", "1 / 100")
	expect(t, "binary entry", c.get("/dlq/"+f.dlq+"/"+recs[1].ID), http.StatusOK, "00 ff 10 68 69", "binary", "0001", "(hex)")

	// Paging.
	f.insert(3, nil)
	r = c.get("/dlq/" + f.dlq + "?order=oldest&status=pending")
	if !strings.Contains(r.body, "<option value=\"oldest\" selected>") {
		t.Error("order not kept in the form")
	}
	expect(t, "workers, not configured", c.get("/workers"), http.StatusOK, "not configured")
	expect(t, "lag, not configured", c.get("/lag"), http.StatusOK, "not configured")
	r = c.get("/static/console.css")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/css") {
		t.Errorf("console.css = %d %s", r.status, r.header.Get("Content-Type"))
	}
}

func TestPaging(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	recs := f.insert(60, nil)
	c := f.client().login(opToken)
	r := c.get("/dlq/" + f.dlq + "?order=oldest")
	if !strings.Contains(r.body, recs[49].ID+"<") || strings.Contains(r.body, ">"+recs[50].ID+"<") {
		t.Fatal("first page is not the first 50 entries")
	}
	i := strings.Index(r.body, `href="/dlq/`+f.dlq+`?`)
	next := r.body[i+len(`href="`):]
	next = strings.ReplaceAll(next[:strings.Index(next, `"`)], "&amp;", "&")
	if !strings.Contains(next, "cursor=") || !strings.Contains(next, "order=oldest") {
		t.Fatalf("next link %q", next)
	}
	r = c.get(next)
	expect(t, "second page", r, http.StatusOK, ">"+recs[50].ID+"<", ">"+recs[59].ID+"<", "first page")
	if strings.Contains(r.body, ">"+recs[49].ID+"<") || strings.Contains(r.body, `id="next"`) {
		t.Error("second page repeats the first or has a next page")
	}
}

// workerSource and lagSource stand for the samplers (the browser test
// runs the real ones against Redis and Kafka).
type workerSource struct{ rows []heartbeat.WorkerStatus }

func (w workerSource) Last() ([]heartbeat.WorkerStatus, time.Time, error) {
	return w.rows, time.Now(), nil
}

func TestHealthPages(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.Workers = workerSource{rows: []heartbeat.WorkerStatus{{Type: "billing", Instance: "billing-1", Status: heartbeat.StatusMissing,
			Severity: heartbeat.SeverityCritical, LastSeen: time.Now().Add(-2 * time.Minute), Reason: "no heartbeat for 2m"},
			{Type: "payout", Instance: "relay-1", Status: heartbeat.StatusRunning, Severity: heartbeat.SeverityOK, LastSeen: time.Now(),
				Endpoint: &heartbeat.Endpoint{URL: "https://payouts.internal/<script>", Outcomes: map[string]int64{"success": 1234, "timeout": 7},
					P50: 1500 * time.Microsecond, P99: 420 * time.Millisecond}}}}
		cfg.Lag = lagSource{}
	})
	c := f.client().login(viewerToken)
	r := c.get("/workers")
	expect(t, "workers", r, http.StatusOK, "billing-1", "MISSING", "CRITICAL", "no heartbeat for 2m", "2m ago",
		`id="endpoints"`, "relay-1", "https://payouts.internal/&lt;script&gt;", ">1234<", ">7<", ">1.5ms<", ">420ms<")
	if strings.Count(r.body, "https://payouts.internal") != 1 || strings.Contains(r.body, "<script>") {
		t.Error("the endpoints table lists the relay once, its URL escaped")
	}
	r = c.get("/lag")
	expect(t, "lag", r, http.StatusOK, "billing", "orders", "42", "STALL", "WARNING", "committed offset 7 not moving")
	if strings.Contains(r.body, "RabbitMQ") {
		t.Error("the Kafka console shows RabbitMQ depths")
	}
}

func TestInsecureNoAuth(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) { cfg.Users, cfg.InsecureNoAuth = nil, true })
	rec := f.insert(1, nil)[0]
	c := f.client()
	expect(t, "DLQ list without login", c.get("/"), http.StatusOK, f.dlq, "local")
	if r := c.get("/login"); r.status != http.StatusSeeOther {
		t.Errorf("GET /login without auth = %d, want a redirect", r.status)
	}
	expect(t, "replay without csrf", c.post("/dlq/"+f.dlq+"/"+rec.ID+"/replay", url.Values{"csrf": {""}}), http.StatusForbidden, "csrf:")
	expect(t, "entry page", c.get("/dlq/"+f.dlq+"/"+rec.ID), http.StatusOK, `id="replay"`)
	if r := c.post("/dlq/"+f.dlq+"/"+rec.ID+"/replay", nil); r.status != http.StatusSeeOther {
		t.Fatalf("replay = %d: %s", r.status, clip(r.body))
	}
	if _, trail, _ := f.ops.Show(context.Background(), f.dlq, rec.ID); len(trail) != 1 || trail[0].Actor != console.LocalUser {
		t.Errorf("audit = %+v, want a replay by local", trail)
	}
}

// Wrong tokens in a row get a client refused for a while (429 with
// Retry-After), even with the right token then (TestThrottle: per client
// IP, for the rest of the window).
func TestLoginThrottled(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	c := f.client()
	for range console.MaxLoginFailures {
		expect(t, "wrong token", c.post("/login", url.Values{"token": {"not-the-token"}}), http.StatusUnauthorized, "token: not a valid token")
	}
	r := c.post("/login", url.Values{"token": {opToken}})
	expect(t, "right token after too many wrong ones", r, http.StatusTooManyRequests, "wrong tokens in a row")
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
}
