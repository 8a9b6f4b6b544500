package admin_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestPauseResumeWorker: the pause and resume routes over a real Redis:
// what they answer, what Redis then holds (with the actor audited), and
// their refusals.
func TestPauseResumeWorker(t *testing.T) {
	rdb := testenv.RedisClient(t)
	keys := heartbeat.Keys{Prefix: "i21-admin-" + broker.NewMessageID()[:6] + ":"}
	t.Cleanup(func() {
		ctx := context.Background()
		rdb.Del(ctx, keys.Types(), keys.Paused("payout-executor"), keys.Audit())
	})
	rdb.SAdd(t.Context(), keys.Types(), "payout-executor")
	ops, err := operate.New(operate.Config{Store: memstore.New(memstore.Config{}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet,
		Tokens:  append([]admin.Token{{Name: "ops-team", Secret: secret}}, people...),
		Workers: heartbeat.Pauses{RDB: rdb, Keys: keys}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	f := &fixture{t: t, srv: srv}
	const base = "/internal/v1/workers/"

	m := expect(t, f.do(http.MethodPost, base+"payout-executor/pause", `{"reason":"bank maintenance"}`, "Authorization", bearerOf("alice")), http.StatusOK, "")
	if m["worker"] != "payout-executor" || m["paused"] != true || m["reason"] != "bank maintenance" || m["paused_by"] != "alice" {
		t.Fatalf("pause answered %v", m)
	}
	p, ok, err := heartbeat.Pauses{RDB: rdb, Keys: keys}.Get(t.Context(), "payout-executor")
	if err != nil || !ok || p.Actor != "alice" || time.Since(p.At) > time.Minute {
		t.Fatalf("Redis holds %+v %v %v", p, ok, err)
	}
	m = expect(t, f.do(http.MethodPost, base+"payout-executor/resume", ""), http.StatusOK, "")
	if m["paused"] != false || m["resumed_by"] != "ops-team" || m["paused_by"] != "alice" {
		t.Fatalf("resume answered %v", m)
	}
	if n := rdb.XLen(t.Context(), keys.Audit()).Val(); n != 2 {
		t.Fatalf("audit stream holds %d records, want 2 (pause, resume)", n)
	}

	for _, tc := range []struct {
		name, path, body string
		status           int
		param, code      string
	}{
		{"resume when not paused", "payout-executor/resume", "", http.StatusConflict, "", admin.CodeNotPaused},
		{"unknown worker", "payuot-executor/pause", `{"reason":"x"}`, http.StatusNotFound, "worker", admin.CodeNotFound},
		{"no reason", "payout-executor/pause", `{}`, http.StatusBadRequest, "reason", admin.CodeInvalidRequest},
		{"no body", "payout-executor/pause", "", http.StatusBadRequest, "body", admin.CodeInvalidRequest},
		{"control character", "payout-executor/pause", `{"reason":"a\u001b[31m"}`, http.StatusBadRequest, "reason", admin.CodeInvalidRequest},
		{"unknown field", "payout-executor/pause", `{"reason":"x","for":"1h"}`, http.StatusBadRequest, "for", admin.CodeInvalidRequest},
		{"bad worker name", "pay%20out/pause", `{"reason":"x"}`, http.StatusBadRequest, "worker", admin.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := expect(t, f.do(http.MethodPost, base+tc.path, tc.body), tc.status, tc.param)
			if m["code"] != tc.code {
				t.Errorf("code %v, want %s", m["code"], tc.code)
			}
		})
	}
	if w := f.do(http.MethodGet, base+"payout-executor/pause", ""); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET pause = %d, want 405", w.Code)
	}
}

// TestPauseWorkerWithoutRedis: a server without a WorkerPauser answers
// 503 and changes nothing.
func TestPauseWorkerWithoutRedis(t *testing.T) {
	f := newFixture(t, memstore.New(memstore.Config{}))
	m := expect(t, f.do(http.MethodPost, "/internal/v1/workers/payout-executor/pause", `{"reason":"x"}`), http.StatusServiceUnavailable, "")
	if m["code"] != admin.CodeUnavailable {
		t.Errorf("code %v, want unavailable", m["code"])
	}
}
