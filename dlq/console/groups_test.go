package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
)

// TestGroupsView: the DLQ page opens on its failure groups (counts, an
// SVG sparkline, a link to each group's entries); an operator replays or
// discards a group as a job, with the CSRF token and, to discard, a
// reason; a viewer sees no buttons.
func TestGroupsView(t *testing.T) {
	f := newFixture(t, stores[0].Open(t), nil)
	bank := f.insert(3, nil)
	slow := f.insert(2, func(i int, r *dlq.Record) {
		r.Entry.ErrorClass, r.Entry.ErrorMessage = "db.Timeout", "query <script>x</script> took 12"+strings.Repeat("3", i)+" ms"
	})
	c := f.client().login(opToken)
	r := c.get("/dlq/" + f.dlq)
	expect(t, "DLQ page", r, http.StatusOK, `id="groups"`, `data-group="`+bank[0].Fingerprint+`"`, `data-group="`+slow[0].Fingerprint+`"`,
		"bank rejected transfer &lt;n&gt;", "query &lt;script&gt;x&lt;/script&gt; took &lt;n&gt; ms", `<svg class="spark"`, "<rect ",
		`href="/dlq/`+f.dlq+`?group=`+bank[0].Fingerprint+`"`, `action="/dlq/`+f.dlq+`/discard-all"`, "Replay 3", "Discard 2")
	if strings.Contains(r.body, "<script>x") {
		t.Error("a message's markup reached the page unescaped")
	}
	if strings.Index(r.body, `id="groups"`) > strings.Index(r.body, `id="entries"`) {
		t.Error("the groups do not come first")
	}
	// A group's entries: only them, and no groups table.
	r = c.get("/dlq/" + f.dlq + "?group=" + slow[0].Fingerprint)
	expect(t, "group entries", r, http.StatusOK, ">"+slow[0].ID+"<", ">"+slow[1].ID+"<", "one failure group", `name="group" value="`+slow[0].Fingerprint+`"`)
	if strings.Contains(r.body, ">"+bank[0].ID+"<") || strings.Contains(r.body, `id="groups"`) {
		t.Error("a group's listing shows other entries or the groups")
	}
	expect(t, "bad group", c.get("/dlq/"+f.dlq+"?group=nope"), http.StatusBadRequest, "group:")

	// Discard one group: a reason is required, the CSRF token too.
	form := url.Values{"group": {slow[0].Fingerprint}, "rate": {"0"}}
	expect(t, "discard-all without a reason", c.post("/dlq/"+f.dlq+"/discard-all", form), http.StatusBadRequest, "reason:")
	if r := c.post("/dlq/"+f.dlq+"/discard-all", url.Values{"group": {slow[0].Fingerprint}, "reason": {"x"}, "csrf": {"forged"}}); r.status != http.StatusForbidden {
		t.Errorf("discard-all with a forged CSRF token = %d", r.status)
	}
	form.Set("reason", "known slow query")
	r = c.post("/dlq/"+f.dlq+"/discard-all", form)
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.location, "/jobs/") {
		t.Fatalf("discard-all = %d %q: %s", r.status, r.location, clip(r.body))
	}
	id := strings.TrimPrefix(r.location, "/jobs/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		j, ok := f.srv.Jobs().Job(id)
		if ok && j.State != dlq.JobRunning {
			if j.State != dlq.JobDone || j.Kind != dlq.JobDiscardAll || j.Progress.Discarded != 2 || j.Actor != "alice" {
				t.Fatalf("job = %+v", j)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s does not end", id)
		case <-time.After(5 * time.Millisecond): // polling the job, as its page does
		}
	}
	for _, rec := range slow {
		trail, err := f.store.Audit(context.Background(), f.dlq, rec.ID)
		if err != nil || len(trail) != 1 || trail[0].Action != dlq.ActionDiscard || trail[0].Reason != "known slow query" || trail[0].Actor != "alice" {
			t.Errorf("%s audit = %+v, %v", rec.ID, trail, err)
		}
	}
	expect(t, "discard-all's page", c.get("/jobs/"+id), http.StatusOK, "Discard-all of", `id="job-discarded"`, "known slow query", "failure group")
	expect(t, "jobs page", c.get("/jobs"), http.StatusOK, `<span class="badge">discard</span>`)
	if r := c.get("/dlq/" + f.dlq); strings.Contains(r.body, "Discard 2") || !strings.Contains(r.body, "Discard 3") {
		t.Error("the discarded group still offers its buttons, or the other lost them")
	}

	viewer := f.client().login(viewerToken)
	if r := viewer.get("/dlq/" + f.dlq); !strings.Contains(r.body, `id="groups"`) || strings.Contains(r.body, "discard-all") || strings.Contains(r.body, "Replay 3") {
		t.Error("a viewer sees no groups, or their buttons")
	}
	if r := viewer.post("/dlq/"+f.dlq+"/discard-all", url.Values{"group": {bank[0].Fingerprint}, "reason": {"x"}}); r.status != http.StatusForbidden {
		t.Errorf("a viewer's discard-all = %d", r.status)
	}
}
