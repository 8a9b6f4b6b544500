package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestHostileInputEveryPage sends every hostile value in every place of
// every page and form of the console (path segments, query parameters,
// form fields), on each store: the answer is 4xx or a page, never 5xx; a
// text filter with a control character, invalid UTF-8 or over-long
// answers 400 naming it; no "<" of the value reaches a page; nothing
// changed the entries.
func TestHostileInputEveryPage(t *testing.T) {
	rdb := testenv.RedisClient(t)
	keys := heartbeat.Keys{Prefix: testenv.RedisPrefix(t, rdb)}
	rdb.SAdd(t.Context(), keys.Types(), "billing")
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t), func(cfg *console.Config) { cfg.Pauser = heartbeat.Pauses{RDB: rdb, Keys: keys} })
			recs := f.insert(2, nil)
			rec := recs[0]
			op := f.client().login(opToken)
			// A discarded entry: hostile reasons for it are refused (400) or
			// find it not pending (409), never discard anything.
			done := "/dlq/" + f.dlq + "/" + recs[1].ID
			if r := op.post(done+"/discard", url.Values{"reason": {"done"}}); r.status != http.StatusSeeOther {
				t.Fatalf("discard = %d", r.status)
			}
			for _, v := range testenv.Hostile {
				pv, qv := url.PathEscape(v), url.QueryEscape(v)
				controlled := testenv.Controlled(strings.TrimSpace(v), dlq.MaxFilterLen) // the console trims what is typed
				for _, tc := range []struct {
					method, path string
					form         url.Values
					field        string // the 400's field when v is controlled
				}{
					{"GET", "/dlq/" + pv, nil, ""},
					{"GET", "/dlq/" + f.dlq + "/" + pv, nil, ""},
					{"GET", "/dlq/" + f.dlq + "/" + pv + "/payload", nil, ""},
					{"GET", "/dlq/" + f.dlq + "?error_class=" + qv, nil, "error_class"},
					{"GET", "/dlq/" + f.dlq + "?q=" + qv, nil, "q"},
					{"GET", "/dlq/" + f.dlq + "?since=" + qv, nil, ""},
					{"GET", "/dlq/" + f.dlq + "?status=" + qv, nil, ""},
					{"GET", "/dlq/" + f.dlq + "?group=" + qv, nil, ""},
					{"GET", "/dlq/" + f.dlq + "?cursor=" + qv, nil, ""},
					{"GET", "/dlq/" + f.dlq + "?range=" + qv, nil, ""},
					{"POST", "/dlq/" + f.dlq + "/" + pv + "/replay", url.Values{}, ""},
					{"POST", "/dlq/" + pv + "/" + rec.ID + "/discard", url.Values{"reason": {"x"}}, ""},
					{"POST", done + "/discard", url.Values{"reason": {v}}, ""},
					{"POST", "/dlq/" + f.dlq + "/replay-all", url.Values{"error_class": {v}, "q": {"nothing-matches"}}, "error_class"},
					{"POST", "/dlq/" + f.dlq + "/replay-all", url.Values{"q": {v}, "error_class": {"nothing-matches"}}, "q"},
					{"POST", "/dlq/" + f.dlq + "/replay-all", url.Values{"since": {v}, "error_class": {"nothing-matches"}}, ""},
					{"POST", "/dlq/" + f.dlq + "/replay-all", url.Values{"rate": {v}, "error_class": {"nothing-matches"}}, ""},
					{"POST", "/dlq/" + f.dlq + "/discard-all", url.Values{"reason": {v}, "error_class": {"nothing-matches"}}, ""},
					{"GET", "/jobs/" + pv, nil, ""},
					{"POST", "/jobs/" + pv + "/cancel", url.Values{}, ""},
					{"POST", "/workers/" + pv + "/pause", url.Values{"reason": {"x"}}, ""},
					{"POST", "/workers/billing/pause", url.Values{"reason": {v}}, ""},
					{"POST", "/workers/" + pv + "/resume", url.Values{}, ""},
					{"GET", "/lag?range=" + qv, nil, ""},
					{"GET", "/workers?range=" + qv, nil, ""},
					{"GET", "/login?next=" + qv, nil, ""},
				} {
					var r response
					if tc.method == "GET" {
						r = op.get(tc.path)
					} else {
						r = op.post(tc.path, tc.form)
					}
					if strings.Contains(v, "<") && strings.Contains(r.body, v) {
						t.Errorf("%s %.100q: the value reached the page unescaped", tc.method, tc.path)
					}
					// A form over MaxFormBytes is refused as a whole ("form: ").
					if tc.field != "" && controlled && (r.status != http.StatusBadRequest ||
						!strings.Contains(r.body, tc.field+": ") && !strings.Contains(r.body, "form: ")) {
						t.Errorf("%s %.100q %.100v: %d, want 400 naming %s: %s", tc.method, tc.path, tc.form, r.status, tc.field, clip(r.body))
					}
				}
				_ = op.post("/workers/billing/resume", url.Values{}) // the next pause may run
				waitJobs(t, f)
			}
			// A since not in the past selects nothing a job could take.
			future := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04")
			expect(t, "replay-all since the future", op.post("/dlq/"+f.dlq+"/replay-all", url.Values{"since": {future}}), http.StatusBadRequest, "since: ")
			if got := get(t, f, rec.ID); got.Status != dlq.StatusPending {
				t.Errorf("the entry after hostile input: %s", got.Status)
			}
		})
	}
}

// waitJobs waits until no job of f runs, so that the next one may start.
func waitJobs(t *testing.T, f *fixture) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		running := false
		for _, j := range f.srv.Jobs().List() {
			running = running || j.State == dlq.JobRunning
		}
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("jobs still running")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
