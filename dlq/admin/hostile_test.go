package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/jobs"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestHostileInputEveryRoute sends every hostile value in every place of
// every route of the API (path segments, each query parameter, each body
// field, the actor header), on each store: the answer is 4xx, never 5xx;
// a text filter with a control character, invalid UTF-8 or over-long
// answers 400 naming it (issue 40: error_class=%00 on replay-all answered
// 500); nothing changed the entries.
func TestHostileInputEveryRoute(t *testing.T) {
	rdb := testenv.RedisClient(t)
	keys := heartbeat.Keys{Prefix: testenv.RedisPrefix(t, rdb)}
	rdb.SAdd(t.Context(), keys.Types(), "payout-executor")
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			s := st.Open(t)
			f := newFixture(t, s)
			ops, err := operate.New(operate.Config{Store: s, Republisher: f.pub, Logger: quiet, Routes: testRoutes()})
			if err != nil {
				t.Fatal(err)
			}
			// The jobs in the store where it keeps them (PostgreSQL), as
			// redrive serve runs them.
			var store dlq.JobStore
			if js, ok := s.(interface{ Jobs() dlq.JobStore }); ok {
				store = js.Jobs()
			}
			jobs, err := jobs.New(jobs.Config{Ops: ops, Store: store, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			f.srv, err = admin.New(admin.Config{Ops: ops, Jobs: jobs, Listen: "127.0.0.1:0", Logger: quiet,
				Tokens: []admin.Token{{Name: "ops-team", Secret: secret}}, Workers: heartbeat.Pauses{RDB: rdb, Keys: keys}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.srv.Close)
			rec := f.insert("h.dlq", 1, nil)[0]
			const base = "/internal/v1/"
			for _, v := range testenv.Hostile {
				pv, qv := url.PathEscape(v), url.QueryEscape(v)
				body := func(fields ...string) string {
					m := map[string]string{}
					for _, k := range fields {
						m[k] = v
					}
					b, _ := json.Marshal(m)
					return string(b)
				}
				for _, tc := range []struct {
					method, target, body string
					param                string // the 400's param when v is controlled, "" when any 4xx will do
				}{
					{"GET", base + "dlq/" + pv, "", ""},
					{"GET", base + "dlq/" + pv + "/" + rec.ID, "", ""},
					{"GET", base + "dlq/h.dlq/" + pv, "", ""},
					{"GET", base + "dlq/h.dlq/" + pv + "/payload", "", ""},
					{"GET", base + "dlq/" + pv + "/groups", "", ""},
					{"GET", base + "dlq/h.dlq?error_class=" + qv, "", "error_class"},
					{"GET", base + "dlq/h.dlq?q=" + qv, "", "q"},
					{"GET", base + "dlq/h.dlq/groups?limit=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?status=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?since=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?until=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?order=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?group=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?cursor=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?limit=" + qv, "", ""},
					{"GET", base + "dlq/h.dlq?" + qv + "=1", "", ""},
					{"DELETE", base + "dlq/h.dlq/" + pv + "?reason=x", "", ""},
					{"DELETE", base + "dlq/" + pv + "/" + rec.ID + "?reason=x", "", ""},
					{"POST", base + "dlq/replay", body("topic"), ""},
					{"POST", base + "dlq/replay", body("id"), ""},
					{"POST", base + "dlq/replay", body("topic", "id"), ""},
					{"POST", base + "dlq/replay-all?topic=" + qv, "", ""},
					{"POST", base + "dlq/replay-all?topic=h.dlq&error_class=" + qv, "", "error_class"},
					{"POST", base + "dlq/replay-all?topic=h.dlq&q=" + qv, "", "q"},
					{"POST", base + "dlq/replay-all?topic=h.dlq&since=" + qv, "", ""},
					{"POST", base + "dlq/replay-all?topic=h.dlq&group=" + qv, "", ""},
					{"POST", base + "dlq/replay-all?topic=h.dlq&rate=" + qv, "", ""},
					{"POST", base + "dlq/discard-all?topic=h.dlq&reason=x&error_class=" + qv, "", "error_class"},
					{"POST", base + "dlq/discard-all?topic=h.dlq&reason=x&q=" + qv, "", "q"},
					{"POST", base + "dlq/discard-all?topic=h.dlq&error_class=nothing-matches&reason=" + qv, "", ""},
					{"POST", base + "dlq/discard-all?topic=h.dlq&error_class=nothing-matches", body("reason"), ""},
					{"GET", base + "dlq/jobs/" + pv, "", ""},
					{"POST", base + "dlq/jobs/" + pv + "/cancel", "", ""},
					{"POST", base + "workers/" + pv + "/pause", `{"reason":"x"}`, ""},
					{"POST", base + "workers/payout-executor/pause", body("reason"), ""},
					{"POST", base + "workers/" + pv + "/resume", "", ""},
				} {
					w := f.do(tc.method, tc.target, tc.body)
					if w.Code >= 500 {
						continue // f.do reported it
					}
					switch {
					case tc.param != "" && testenv.Controlled(v, dlq.MaxFilterLen):
						if w.Code != http.StatusBadRequest {
							t.Errorf("%s %.120q: %d, want 400 naming %s: %.300s", tc.method, tc.target, w.Code, tc.param, w.Body)
						} else if m := decode(t, w); m["param"] != tc.param {
							t.Errorf("%s %.120q: param %v, want %s", tc.method, tc.target, m["param"], tc.param)
						}
					case tc.param != "" && w.Code >= 300:
						// A plain value: filters, jobs started (an empty
						// selection: nothing matches it).
						if w.Code != http.StatusConflict {
							t.Errorf("%s %.120q: %d: %.300s", tc.method, tc.target, w.Code, w.Body)
						}
					}
				}
				// The actor header: refused or taken, never a failure.
				w := f.do("POST", base+"dlq/replay-all?topic=h.dlq&error_class=nothing-matches", "", "X-Redrive-Actor", strings.ToValidUTF8(v, "?"))
				_ = w
				waitJobs(t, f)
			}
			// A since not in the past selects nothing a job could take:
			// 400 naming it (issue 40: the job was started and failed).
			future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			for _, target := range []string{"dlq/replay-all?topic=h.dlq&since=" + future, "dlq/discard-all?topic=h.dlq&reason=x&since=" + future} {
				expect(t, f.do("POST", base+target, ""), http.StatusBadRequest, "since")
			}
			// A reason with NUL or an escape cannot be kept as given: 400.
			for _, reason := range []string{"a\x00b", "\x1b[2J", "\xff"} {
				expect(t, f.do("DELETE", base+"dlq/h.dlq/"+rec.ID+"?reason="+url.QueryEscape(reason), ""), http.StatusBadRequest, "reason")
				expect(t, f.do("POST", base+"dlq/discard-all?topic=h.dlq&reason="+url.QueryEscape(reason), ""), http.StatusBadRequest, "reason")
			}
			if got, err := s.Get(context.Background(), "h.dlq", rec.ID); err != nil || got.Status != dlq.StatusPending {
				t.Errorf("the entry after hostile input: %s, %v", got.Status, err)
			}
		})
	}
}

// waitJobs waits until no job of f runs, so that the next one may start.
func waitJobs(t *testing.T, f *fixture) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs, err := f.srv.Jobs().ListJobs(context.Background())
		running := false
		for _, j := range jobs {
			running = running || j.State == dlq.JobRunning
		}
		if err != nil || !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs still running: %+v", jobs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
