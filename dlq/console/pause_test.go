package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestPauseWorkerPage: an operator pauses and resumes a worker from the
// workers page (Redis holds the pause, with the operator as actor); a
// viewer sees no buttons and is refused.
func TestPauseWorkerPage(t *testing.T) {
	rdb := testenv.RedisClient(t)
	keys := heartbeat.Keys{Prefix: "i21-console-" + broker.NewMessageID()[:6] + ":"}
	t.Cleanup(func() { rdb.Del(context.Background(), keys.Types(), keys.Paused("billing"), keys.Audit()) })
	rdb.SAdd(t.Context(), keys.Types(), "billing")
	pauses := heartbeat.Pauses{RDB: rdb, Keys: keys}
	rows := []heartbeat.WorkerStatus{{Type: "billing", Instance: "billing-1", Status: heartbeat.StatusRunning,
		Severity: heartbeat.SeverityOK, LastSeen: time.Now(), Conditions: []heartbeat.Condition{heartbeat.ConditionOK}}}
	f := newFixture(t, stores[0].Open(t), func(cfg *console.Config) {
		cfg.Workers = workerSource{rows: rows}
		cfg.Pauser = pauses
	})
	viewer := f.client().login(viewerToken)
	r := viewer.get("/workers")
	expect(t, "workers page of a viewer", r, http.StatusOK, "billing-1")
	if strings.Contains(r.body, `id="pause-billing"`) {
		t.Error("a viewer is offered Pause")
	}
	expect(t, "pause by a viewer", viewer.post("/workers/billing/pause", url.Values{"reason": {"x"}}), http.StatusForbidden)

	op := f.client().login(opToken)
	expect(t, "workers page of an operator", op.get("/workers"), http.StatusOK, `id="pause-billing"`)
	expect(t, "pause without a reason", op.post("/workers/billing/pause", nil), http.StatusBadRequest, "reason")
	expect(t, "pause of an unknown worker", op.post("/workers/nobody/pause", url.Values{"reason": {"x"}}), http.StatusNotFound)
	r = op.post("/workers/billing/pause", url.Values{"reason": {"bank maintenance"}})
	if r.status != http.StatusSeeOther || r.location != "/workers" {
		t.Fatalf("pause = %d %q: %s", r.status, r.location, clip(r.body))
	}
	p, ok, err := pauses.Get(t.Context(), "billing")
	if err != nil || !ok || p.Actor != "alice" || p.Reason != "bank maintenance" {
		t.Fatalf("Redis holds %+v %v %v", p, ok, err)
	}
	r = op.post("/workers/billing/resume", nil)
	if r.status != http.StatusSeeOther {
		t.Fatalf("resume = %d: %s", r.status, clip(r.body))
	}
	if _, ok, _ := pauses.Get(t.Context(), "billing"); ok {
		t.Fatal("still paused after resume")
	}
	expect(t, "resume when not paused", op.post("/workers/billing/resume", nil), http.StatusConflict, "not paused")
}
