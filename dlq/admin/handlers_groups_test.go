package admin_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// TestGroupsAPI: GET …/{topic}/groups lists the failure groups; group=
// filters the listing; discard-all discards one group as a job, each
// entry audited with the reason; the errors are the documented ones.
func TestGroupsAPI(t *testing.T) {
	for _, st := range stores {
		t.Run(st.Name, func(t *testing.T) {
			f := newFixture(t, st.Open(t))
			bank := f.insert("grp.dlq", 4, nil) // "bank rejected transfer N"
			timeouts := f.insert("grp.dlq", 2, func(i int, r *dlq.Record) {
				r.Identity = "t-" + strconv.Itoa(i)
				r.Entry.ErrorClass, r.Entry.ErrorMessage = "db.Timeout", "query took "+strconv.Itoa(1000+i)+" ms"
				r.ReceivedAt = time.Now().Add(-time.Duration(i) * time.Hour)
			})
			m := expect(t, f.do("GET", "/internal/v1/dlq/grp.dlq/groups", ""), http.StatusOK, "")
			groups, _ := m["groups"].([]any)
			if len(groups) != 2 || m["dlq"] != "grp.dlq" || m["hourly_since"] == nil {
				t.Fatalf("groups = %v", m)
			}
			g0, g1 := groups[0].(map[string]any), groups[1].(map[string]any)
			if g0["fingerprint"] != bank[0].Fingerprint || g0["message"] != "bank rejected transfer <n>" || g0["count"] != 4.0 ||
				g0["pending"] != 4.0 || g0["worker"] != "billing" || g0["error_class"] != "payout.BankError" || g0["sample_id"] != bank[3].ID {
				t.Errorf("first group = %v", g0)
			}
			hourly, _ := g1["hourly"].([]any)
			if g1["fingerprint"] != timeouts[0].Fingerprint || g1["message"] != "query took <n> ms" || len(hourly) != dlq.SparklineHours ||
				hourly[23] != 1.0 || hourly[22] != 1.0 {
				t.Errorf("second group = %v", g1)
			}
			if m := expect(t, f.do("GET", "/internal/v1/dlq/grp.dlq/groups?limit=1", ""), http.StatusOK, ""); len(m["groups"].([]any)) != 1 {
				t.Errorf("limit=1: %v", m)
			}
			m = expect(t, f.do("GET", "/internal/v1/dlq/grp.dlq?group="+timeouts[0].Fingerprint, ""), http.StatusOK, "")
			if es, _ := m["entries"].([]any); len(es) != 2 {
				t.Errorf("group= listing = %v", m)
			}

			// Discard the timeouts as a job.
			target := "/internal/v1/dlq/discard-all?topic=grp.dlq&rate=0&group=" + timeouts[0].Fingerprint
			expect(t, f.do("POST", target, ""), http.StatusBadRequest, "reason")
			w := f.do("POST", target, `{"reason":"a known slow query"}`, "Authorization", bearerOf("carol"))
			m = expect(t, w, http.StatusAccepted, "")
			job, _ := m["job"].(map[string]any)
			if job["kind"] != dlq.JobDiscardAll || job["reason"] != "a known slow query" || w.Header().Get("Location") == "" {
				t.Fatalf("discard-all = %v", m)
			}
			id, _ := job["id"].(string)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for {
				j, ok := f.srv.Jobs().Job(id)
				if !ok {
					t.Fatalf("job %s is gone", id)
				}
				if j.State != dlq.JobRunning {
					if j.State != dlq.JobDone || j.Progress.Discarded != 2 || j.Progress.Total != 2 {
						t.Fatalf("job = %+v", j)
					}
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("job %s still running: %+v", id, j)
				case <-time.After(5 * time.Millisecond): // polling the job's state, as a client does
				}
			}
			for _, r := range timeouts {
				got, err := f.store.Get(context.Background(), "grp.dlq", r.ID)
				trail, _ := f.store.Audit(context.Background(), "grp.dlq", r.ID)
				if err != nil || got.Status != dlq.StatusDiscarded || len(trail) != 1 || trail[0].Actor != "carol" || trail[0].Reason != "a known slow query" {
					t.Errorf("%s: %s, audit %+v, %v", r.ID, got.Status, trail, err)
				}
			}
			if got, _ := f.store.Get(context.Background(), "grp.dlq", bank[0].ID); got.Status != dlq.StatusPending {
				t.Errorf("an entry of the other group is %s", got.Status)
			}
			m = expect(t, f.do("POST", "/internal/v1/dlq/replay-all?topic=grp.dlq&rate=0&group="+bank[0].Fingerprint, ""), http.StatusAccepted, "")
			if job, _ := m["job"].(map[string]any); job["kind"] != dlq.JobReplayAll || job["filter"].(map[string]any)["group"] != bank[0].Fingerprint {
				t.Errorf("replay-all of a group = %v", m)
			}

			// Errors.
			expect(t, f.do("GET", "/internal/v1/dlq/nope.dlq/groups", ""), http.StatusNotFound, "")
			expect(t, f.do("GET", "/internal/v1/dlq/grp.dlq/groups?limit=0", ""), http.StatusBadRequest, "limit")
			expect(t, f.do("GET", "/internal/v1/dlq/grp.dlq/groups?x=1", ""), http.StatusBadRequest, "x")
			expect(t, f.do("GET", "/internal/v1/dlq/grp.dlq?group=XYZ", ""), http.StatusBadRequest, "group")
			expect(t, f.do("POST", "/internal/v1/dlq/discard-all?topic=grp.dlq&group=xyz&reason=r", ""), http.StatusBadRequest, "group")
			expect(t, f.do("POST", "/internal/v1/dlq/discard-all?topic=grp.dlq&reason=r", `{"reason":"r"}`), http.StatusBadRequest, "reason")
			expect(t, f.do("POST", "/internal/v1/dlq/discard-all?topic=nope.dlq&reason=r", ""), http.StatusNotFound, "")
		})
	}
}
