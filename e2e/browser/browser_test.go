package browser

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/heartbeat"
)

// chromium returns the browser's path: REDRIVE_CHROMIUM, else the first of
// the usual names on PATH. Without one the test fails (CI installs
// Debian's chromium), unless REDRIVE_BROWSER=skip.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("REDRIVE_BROWSER") == "skip" {
		t.Skip("REDRIVE_BROWSER=skip: the console's browser test is skipped")
	}
	if p := os.Getenv("REDRIVE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found on PATH: install Debian's chromium package (.ci/run does), set REDRIVE_CHROMIUM, or REDRIVE_BROWSER=skip")
	return ""
}

// browser starts a headless Chromium for t.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1360, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, without a timeout
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return ctx
}

// stepTimeout bounds each group of browser steps.
const stepTimeout = time.Minute

// run runs browser steps, failing t on the first error.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, ctx, what, chromedp.Steps(steps...))
}

// get runs one browser action and returns its value, failing t on error.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, loc, err)
	}
	return v
}

// text returns the text of the element with id.
func text(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	return get(t, ctx, "read #"+id, chromedp.Text(chromedp.ID(id)))
}

// screenshot saves the page as docs/screenshots/<name>.png when
// REDRIVE_SCREENSHOTS=1.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("REDRIVE_SCREENSHOTS") != "1" {
		return
	}
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join("..", "..", "docs", "screenshots", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", path)
}

// chartAt1280 sets the page 1280 px wide (what the charts are drawn
// for) and checks that the SVG chart sel is drawn there, within the
// page's width, with texts (axis labels, units, series) on it.
func chartAt1280(t *testing.T, ctx context.Context, sel string, texts ...string) {
	t.Helper()
	run(t, ctx, "set the width to 1280 px", chromedp.EmulateViewport(1280, 900))
	width := get(t, ctx, "measure "+sel, chromedp.Evaluate[float64](`(() => { const e = document.querySelector("`+sel+`"); return e ? e.getBoundingClientRect().width : -1 })()`))
	if width < 900 || width > 1280 {
		t.Errorf("%s is %v px wide at 1280 px (absent: -1)", sel, width)
	}
	got := get(t, ctx, "read "+sel, chromedp.Evaluate[string](`document.querySelector("`+sel+`").textContent`))
	for _, want := range texts {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q: %q", sel, want, got)
		}
	}
}

// waitStored waits for n dead letters stored by the keeper.
func (s *stack) waitStored(t *testing.T, n int) []dlq.Record {
	t.Helper()
	var out []dlq.Record
	timeout := time.After(90 * time.Second)
	for len(out) < n {
		select {
		case r := <-s.stored:
			out = append(out, r)
		case <-timeout:
			t.Fatalf("%d of %d dead letters stored after 90s", len(out), n)
		}
	}
	return out
}

// TestConsole logs in, finds the entries a failing worker produced, opens
// one, replays it (and sees the worker get it back), discards another
// with a reason, checks that a post without the CSRF token is refused and
// that the cookie is out of JavaScript's reach, runs a replay-all, and
// looks at the failure groups and the workers and lag pages.
func TestConsole(t *testing.T) {
	path := chromium(t)
	s := newStack(t)
	s.publish(t,
		`{"deal":"d-100","amount":120.5,"note":"poison"}`,
		`{"deal":"d-101","amount":80}`,
		`{"deal":"d-102","amount":42,"note":"poison"}`,
		`{"deal":"d-103","amount":7,"note":"poison"}`,
		`{"deal":"d-104","amount":3.25,"note":"poison"}`,
	)
	recs := s.waitStored(t, 4)
	byDeal := map[string]dlq.Record{}
	for _, r := range recs {
		for _, d := range []string{"d-100", "d-102", "d-103", "d-104"} {
			if strings.Contains(string(r.Entry.OriginalValue), d) {
				byDeal[d] = r
			}
		}
	}
	if len(byDeal) != 4 {
		t.Fatalf("stored %d distinct poison messages, want 4", len(byDeal))
	}

	ctx := browser(t, path)
	dlqPath := "/dlq/" + s.dlq
	link := func(href string) chromedp.CSS { return chromedp.CSS(`a[href="` + href + `"]`) }

	// Log in: the console sends us to the login page first.
	run(t, ctx, "open the console",
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.ID("token")))
	screenshot(t, ctx, "login")
	run(t, ctx, "log in",
		chromedp.SendKeys(chromedp.ID("token"), operatorToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("dlqs")))
	if got := text(t, ctx, "dlqs"); !strings.Contains(got, s.dlq) || !strings.Contains(got, "critical") {
		t.Errorf("DLQ list %q lacks %s or its severity", got, s.dlq)
	}
	screenshot(t, ctx, "dlqs")

	// The entries the worker produced.
	run(t, ctx, "open the DLQ",
		chromedp.Click(link(dlqPath)),
		chromedp.WaitVisible(chromedp.ID("entries")))
	got := text(t, ctx, "entries")
	for _, r := range recs {
		if !strings.Contains(got, r.ID) {
			t.Errorf("entries table lacks %s: %q", r.ID, got)
		}
	}
	if !strings.Contains(got, "account closed") {
		t.Errorf("entries table lacks the worker's error: %q", got)
	}
	screenshot(t, ctx, "entries")

	// Above the groups, the chart of the DLQ's arrivals: the four poison
	// messages in this hour's bar, axes labelled with their units; the
	// 7-day range is a link away.
	chartAt1280(t, ctx, "#arrivals-chart", "dead letters / hour", "time (UTC)")
	if got := text(t, ctx, "arrival-ranges"); !strings.Contains(got, "4 dead letters in the last 24 hours") {
		t.Errorf("arrival ranges say %q, want 4 dead letters in the last 24 hours", got)
	}
	screenshot(t, ctx, "arrivals")
	run(t, ctx, "show the last 7 days",
		chromedp.Click(link(dlqPath+"?range=7d")),
		chromedp.WaitVisible(chromedp.ID("arrivals-chart")))
	chartAt1280(t, ctx, "#arrivals-chart", "dead letters / 6 hours", "time (UTC)")
	run(t, ctx, "back to the DLQ page",
		chromedp.Click(link(dlqPath+"?range=24h")),
		chromedp.WaitVisible(chromedp.ID("groups")))

	// The page opens on its failure groups: the poison messages fail
	// alike, one group of four, with a sparkline of their arrivals; its
	// link lists the group's entries.
	if n := get(t, ctx, "count the groups", chromedp.Evaluate[int](`document.querySelectorAll("#groups tbody tr").length`)); n != 1 {
		t.Errorf("%d failure groups, want 1: %q", n, text(t, ctx, "groups"))
	}
	if got := get(t, ctx, "read the group's count", chromedp.Evaluate[string](`document.querySelector("#groups tbody td.num").textContent`)); got != "4" {
		t.Errorf("the group counts %q entries, want 4", got)
	}
	if n := get(t, ctx, "count the sparkline's bars", chromedp.Evaluate[int](`document.querySelectorAll("#groups svg.spark rect").length`)); n < 1 {
		t.Error("the group's sparkline has no bar")
	}
	if got := text(t, ctx, "groups"); !strings.Contains(got, "account closed") {
		t.Errorf("groups table lacks the worker's error: %q", got)
	}
	screenshot(t, ctx, "groups")
	run(t, ctx, "open the group's entries",
		chromedp.Click(chromedp.CSS("#groups a.group-entries")),
		chromedp.WaitVisible(chromedp.ID("entries")))
	if loc := get(t, ctx, "read the location", chromedp.Location()); !strings.Contains(loc, "?group=") {
		t.Errorf("the group's link led to %s", loc)
	}
	got = text(t, ctx, "entries")
	for _, r := range recs {
		if !strings.Contains(got, r.ID) {
			t.Errorf("the group's entries lack %s: %q", r.ID, got)
		}
	}

	// Open one and replay it.
	first := byDeal["d-100"]
	run(t, ctx, "open an entry",
		chromedp.Click(link(dlqPath+"/"+first.ID)),
		chromedp.WaitVisible(chromedp.ID("replay")))
	if got := text(t, ctx, "payload"); !strings.Contains(got, `"deal": "d-100"`) {
		t.Errorf("payload %q is not the pretty JSON of the message", got)
	}
	screenshot(t, ctx, "entry")
	run(t, ctx, "replay it",
		chromedp.Click(chromedp.ID("replay")),
		chromedp.WaitVisible(chromedp.ID("audit")))
	if status, audit := text(t, ctx, "status"), text(t, ctx, "audit"); status != "replayed" || !strings.Contains(audit, "alice") || !strings.Contains(audit, "replay") {
		t.Errorf("after replay: status %q, audit %q", status, audit)
	}
	select {
	case from := <-s.replayed:
		if from != dlq.ReplayedFrom(s.dlq, first.ID) {
			t.Errorf("the worker got a replay of %s, want %s", from, first.ID)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not get the replayed message within 60s")
	}
	screenshot(t, ctx, "entry-replayed")

	// Discard another with a reason.
	second := byDeal["d-102"]
	run(t, ctx, "discard another",
		chromedp.Navigate(s.url+dlqPath+"/"+second.ID),
		chromedp.WaitVisible(chromedp.ID("discard")),
		chromedp.SendKeys(chromedp.ID("reason"), "duplicate payment, refunded by hand"),
		chromedp.Click(chromedp.ID("discard")),
		chromedp.WaitVisible(chromedp.ID("audit")))
	if status, audit := text(t, ctx, "status"), text(t, ctx, "audit"); status != "discarded" || !strings.Contains(audit, "duplicate payment, refunded by hand") || !strings.Contains(audit, "discard") {
		t.Errorf("after discard: status %q, audit %q", status, audit)
	}

	// The session cookie: HttpOnly, SameSite=Strict, out of JavaScript's
	// reach; a post with it but without the CSRF token is refused.
	cookies := get(t, ctx, "read the cookies", func(ctx context.Context, tg *chromedp.Target) (network.GetCookiesResult, error) {
		return chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{s.url}})
	})
	var session *network.Cookie
	for _, c := range cookies.Cookies {
		if c.Name == "redrive_session" {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict {
		t.Fatalf("session cookie = %+v, want HttpOnly and SameSite=Strict", session)
	}
	if js := get(t, ctx, "read document.cookie", chromedp.Evaluate[string](`document.cookie`)); strings.Contains(js, "redrive_session") {
		t.Errorf("document.cookie shows the session: %q", js)
	}
	third := byDeal["d-103"]
	for _, form := range []url.Values{{}, {"csrf": {"forged-token"}}} {
		code, body := post(t, s.url+dlqPath+"/"+third.ID+"/replay", session.Value, form)
		if code != http.StatusForbidden || !strings.Contains(body, "csrf:") {
			t.Errorf("replay with the session cookie and csrf %q = %d, want 403 naming csrf", form.Get("csrf"), code)
		}
	}
	if got, err := s.store.Get(context.Background(), s.dlq, third.ID); err != nil || got.Status != dlq.StatusPending {
		t.Errorf("entry after the refused post: %s, %v; want pending", got.Status, err)
	}

	// Replay-all of the rest, with its progress page, which refreshes
	// itself (no JavaScript) until the job is done.
	run(t, ctx, "start a replay-all",
		chromedp.Navigate(s.url+dlqPath),
		chromedp.WaitVisible(chromedp.ID("replay-all")),
		chromedp.Click(chromedp.CSS("#replay-all button")),
		chromedp.WaitVisible(chromedp.ID("job-state")))
	loc := get(t, ctx, "read the location", chromedp.Location())
	jobID, ok := strings.CutPrefix(loc, s.url+"/jobs/")
	if !ok {
		t.Fatalf("replay-all led to %s, not a job page", loc)
	}
	for range 2 {
		select {
		case <-s.replayed:
		case <-time.After(60 * time.Second):
			t.Fatal("the worker did not get the replay-all's messages within 60s")
		}
	}
	run(t, ctx, "see the job done", chromedp.WaitVisible(chromedp.CSS(".job-done")))
	if got := text(t, ctx, "job-replayed"); got != "2 of 2" {
		t.Errorf("job page says %q replayed, want 2 of 2", got)
	}
	if j, ok := s.srv.Jobs().Job(jobID); !ok || j.State != dlq.JobDone || j.Actor != "alice" {
		t.Errorf("job = %+v", j)
	}
	screenshot(t, ctx, "replay-all")

	// Workers and lag, sampled now, three times: the charts of their
	// history have lines.
	for range 3 {
		s.samplers(context.Background())
	}
	run(t, ctx, "open the workers page",
		chromedp.Click(link("/workers")),
		chromedp.WaitVisible(chromedp.ID("workers")))
	if got := text(t, ctx, "workers"); !strings.Contains(got, group+"-1") || !strings.Contains(got, "RUNNING") || !strings.Contains(got, "SHUTTING_DOWN") {
		t.Errorf("workers table %q lacks the running and the stopping instance", got)
	}
	screenshot(t, ctx, "workers")
	chartAt1280(t, ctx, "#workers-chart", "instances", "time (UTC)", "OK", "MISSING")
	if n := get(t, ctx, "count the state lines", chromedp.Evaluate[int](`document.querySelectorAll("#workers-chart polyline").length`)); n != len(heartbeat.ChartStates) {
		t.Errorf("the workers chart draws %d lines, want one per state (%d)", n, len(heartbeat.ChartStates))
	}
	screenshot(t, ctx, "workers-chart")
	run(t, ctx, "open the lag page",
		chromedp.Click(link("/lag")),
		chromedp.WaitVisible(chromedp.ID("group-lag")))
	if got := text(t, ctx, "group-lag"); !strings.Contains(got, group) || !strings.Contains(got, topic) {
		t.Errorf("lag table %q lacks %s on %s", got, group, topic)
	}
	screenshot(t, ctx, "lag")
	chartAt1280(t, ctx, "#lag-records-chart", "records", "time (UTC)", group)
	chartAt1280(t, ctx, "#lag-seconds-chart", "seconds", "time (UTC)")
	if n := get(t, ctx, "count the lag lines", chromedp.Evaluate[int](`document.querySelectorAll("#lag-records-chart polyline").length`)); n != 1 {
		t.Errorf("the lag chart draws %d lines, want 1 (%s)", n, group)
	}
	screenshot(t, ctx, "lag-charts")
	run(t, ctx, "back to the full width", chromedp.EmulateReset())

	// A viewer sees the entries but no buttons.
	run(t, ctx, "log out and in as a viewer",
		chromedp.Click(chromedp.CSS("button.link")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), viewerToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("dlqs")),
		chromedp.Navigate(s.url+dlqPath+"/"+third.ID),
		chromedp.WaitVisible(chromedp.ID("audit")))
	if n := get(t, ctx, "count the buttons", chromedp.Evaluate[int](`document.querySelectorAll("#replay, #discard, #replay-all").length`)); n != 0 {
		t.Errorf("a viewer sees %d replay/discard buttons", n)
	}
}

// post sends form with the session cookie, as a script of another tab
// could, and returns the status and body.
func post(t *testing.T, target, session string, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "redrive_session", Value: session})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
