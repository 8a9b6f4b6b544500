package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// TestUI checks that Config.UI gets every path outside /internal/, without
// the bearer token, and that the API keeps its token check.
func TestUI(t *testing.T) {
	s := memstore.New(memstore.Config{Logger: quiet})
	t.Cleanup(func() { _ = s.Close() })
	ops, err := operate.New(operate.Config{Store: s, Republisher: &publisher{}, Logger: quiet, Routes: testRoutes()})
	if err != nil {
		t.Fatal(err)
	}
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-UI", "yes")
		w.WriteHeader(http.StatusTeapot)
	})
	srv, err := admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: quiet, UI: ui,
		Tokens: []admin.Token{{Name: "ops", Secret: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		method, target string
		ui             bool
		status         int
	}{
		{"GET", "/", true, http.StatusTeapot},
		{"GET", "/dlq/a.dlq", true, http.StatusTeapot},
		{"POST", "/login", true, http.StatusTeapot},
		{"GET", "/internalx", true, http.StatusTeapot},
		{"GET", "/internal", false, http.StatusUnauthorized},
		{"GET", "/internal/v1/dlq", false, http.StatusUnauthorized},
		{"GET", "/%69nternal/v1/dlq", false, http.StatusUnauthorized},
	} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(tc.method, tc.target, nil)
		req.Host = "localhost:8080"
		srv.Handler().ServeHTTP(w, req)
		if w.Code != tc.status || (w.Header().Get("X-UI") == "yes") != tc.ui {
			t.Errorf("%s %s = %d (ui %q), want %d (ui %v)", tc.method, tc.target, w.Code, w.Header().Get("X-UI"), tc.status, tc.ui)
		}
	}
}

// TestStartReplayAll drives the exported job API the console uses.
func TestStartReplayAll(t *testing.T) {
	f := newFixture(t, stores[0].Open(t))
	recs := f.insert("sj.dlq", 3, nil)
	ctx := context.Background()
	if _, err := f.srv.Jobs().StartReplayAll(ctx, dlq.Query{DLQ: "nope.dlq"}, "eve", 0); !errors.Is(err, dlq.ErrUnknownDLQ) {
		t.Errorf("unknown DLQ: err = %v", err)
	}
	if _, err := f.srv.Jobs().StartReplayAll(ctx, dlq.Query{DLQ: "a/b"}, "eve", 0); !errors.Is(err, dlq.ErrInvalidQuery) {
		t.Errorf("bad DLQ name: err = %v", err)
	}
	j, err := f.srv.Jobs().StartReplayAll(ctx, dlq.Query{DLQ: "sj.dlq", Status: dlq.StatusReplayed, Limit: 1}, "eve", 0)
	// The job runs in the background: three entries may be replayed before
	// the returned snapshot is taken.
	if err != nil || (j.State != dlq.JobRunning && j.State != dlq.JobDone) || j.Actor != "eve" || j.DLQ != "sj.dlq" {
		t.Fatalf("StartReplayAll = %+v, %v", j, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := f.srv.Jobs().Job(j.ID)
		if !ok {
			t.Fatal("job not found")
		}
		if got.State != dlq.JobRunning {
			if got.State != dlq.JobDone || got.Progress.Replayed != 3 {
				t.Errorf("job = %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still running: %+v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if trail, _ := f.store.Audit(ctx, "sj.dlq", recs[2].ID); len(trail) != 1 || trail[0].Actor != "eve" {
		t.Errorf("audit = %+v", trail)
	}
	if _, ok := f.srv.Jobs().Job("01nonexistent"); ok {
		t.Error("Job of an unknown id found")
	}
	f.srv.Close()
	if _, err := f.srv.Jobs().StartReplayAll(ctx, dlq.Query{DLQ: "sj.dlq"}, "eve", 0); !errors.Is(err, dlq.ErrShuttingDown) {
		t.Errorf("after Close: err = %v", err)
	}
}
