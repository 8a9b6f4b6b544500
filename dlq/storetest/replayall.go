package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

func testReplayAll(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	// 120 entries: even ones of class db.Timeout; 5 discarded; plus
	// another DLQ that must stay untouched.
	recs := fill(t, s, "all.dlq", "a", 120, func(i int, r *dlq.Record) {
		if i%2 == 0 {
			r.Entry.ErrorClass = "db.Timeout"
		}
	})
	for _, r := range recs[:10:10] {
		if r.Entry.ErrorClass != "db.Timeout" {
			continue
		}
		if _, err := s.Transition(ctx, dlq.Transition{DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "t", Action: dlq.ActionDiscard, Reason: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, s, "other.dlq", "o", 10, func(_ int, r *dlq.Record) { r.Entry.ErrorClass = "db.Timeout" })

	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	var (
		reports []operate.Progress
		late    dlq.Record
	)
	opts := operate.ReplayAllOptions{
		Actor:    "alice",
		PageSize: 7,
		Progress: func(p operate.Progress) {
			reports = append(reports, p)
			if p.Replayed == 3 && late.ID == "" {
				// Arrives during the run, matches the filter: left alone.
				r := record("all.dlq", "late", 500)
				r.Entry.ErrorClass = "db.Timeout"
				r.ReceivedAt = time.Time{}
				late = mustInsert(t, s, r)
			}
		},
	}
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "all.dlq", ErrorClass: "db.Timeout"}, opts)
	if err != nil {
		t.Fatalf("ReplayAll: %v", err)
	}
	if p.Total != 55 || p.Replayed != 55 || p.Skipped != 0 || p.Failed != 0 || !p.Done {
		t.Errorf("progress = %+v, want 55 of 55 replayed, done", p)
	}
	seen := map[string]int{}
	for _, c := range pub.published() {
		seen[c.from]++
	}
	if len(seen) != 55 {
		t.Errorf("%d distinct entries republished, want 55", len(seen))
	}
	for from, n := range seen {
		if n != 1 {
			t.Errorf("%s republished %d times", from, n)
		}
	}
	if seen["all.dlq/"+late.ID] != 0 {
		t.Error("an entry received during the run was replayed")
	}
	// Progress reports only grow, and end with Done.
	for i := 1; i < len(reports); i++ {
		if reports[i].Replayed < reports[i-1].Replayed || reports[i].Total != 55 {
			t.Fatalf("progress went from %+v to %+v", reports[i-1], reports[i])
		}
	}
	if last := reports[len(reports)-1]; !last.Done || last.Replayed != 55 {
		t.Errorf("last report = %+v", last)
	}
	// What is left: the other class, the late one, the other DLQ.
	for _, tc := range []struct {
		q    dlq.Query
		want int64
	}{
		{dlq.Query{DLQ: "all.dlq", Status: dlq.StatusPending}, 61},
		{dlq.Query{DLQ: "all.dlq", Status: dlq.StatusReplayed}, 55},
		{dlq.Query{DLQ: "all.dlq", Status: dlq.StatusDiscarded}, 5},
		{dlq.Query{DLQ: "other.dlq", Status: dlq.StatusPending}, 10},
	} {
		if n, err := s.Count(ctx, tc.q); err != nil || n != tc.want {
			t.Errorf("Count(%s %s) = %d, %v; want %d", tc.q.DLQ, tc.q.Status, n, err, tc.want)
		}
	}
	if got := auditActions(t, s, "all.dlq", recs[10].ID); len(got) != 1 || got[0] != dlq.ActionReplay {
		t.Errorf("audit of a replayed entry = %v", got)
	}
	if trail, _ := s.Audit(ctx, "all.dlq", recs[10].ID); len(trail) == 1 && trail[0].Actor != "alice" {
		t.Errorf("audit actor = %q, want alice", trail[0].Actor)
	}

	// Again: nothing left of that class but the late one.
	p, err = ops.ReplayAll(ctx, dlq.Query{DLQ: "all.dlq", ErrorClass: "db.Timeout"}, operate.ReplayAllOptions{Actor: "alice"})
	if err != nil || p.Replayed != 1 || p.Total != 1 {
		t.Errorf("second ReplayAll = %+v, %v; want the late entry only", p, err)
	}

	// Bad requests.
	for _, tc := range []struct {
		q    dlq.Query
		opts operate.ReplayAllOptions
	}{
		{dlq.Query{}, operate.ReplayAllOptions{}},
		{dlq.Query{DLQ: "all.dlq", Status: dlq.StatusReplayed}, operate.ReplayAllOptions{}},
		{dlq.Query{DLQ: "all.dlq"}, operate.ReplayAllOptions{Rate: -1}},
	} {
		if _, err := ops.ReplayAll(ctx, tc.q, tc.opts); !errors.Is(err, dlq.ErrInvalidQuery) {
			t.Errorf("ReplayAll(%+v, %+v) = %v, want ErrInvalidQuery", tc.q, tc.opts, err)
		}
	}
}

func testReplayAllRate(t *testing.T, s dlq.Store) {
	fill(t, s, "rate.dlq", "r", 10, nil)
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	start := time.Now()
	p, err := ops.ReplayAll(context.Background(), dlq.Query{DLQ: "rate.dlq"}, operate.ReplayAllOptions{Rate: 100})
	elapsed := time.Since(start)
	if err != nil || p.Replayed != 10 {
		t.Fatalf("ReplayAll = %+v, %v", p, err)
	}
	// 10 at 100/s: the first at once, then one every 10 ms.
	if elapsed < 85*time.Millisecond {
		t.Errorf("10 replays at 100/s took %v, want at least 90ms", elapsed)
	}

	// A context cancelled between two paced replays stops the run there:
	// cancelled from the progress callback after the first replay, so the
	// test does not depend on how long counting and listing take.
	fill(t, s, "rate2.dlq", "r", 10, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err = ops.ReplayAll(ctx, dlq.Query{DLQ: "rate2.dlq"}, operate.ReplayAllOptions{Rate: 20, Progress: func(p operate.Progress) {
		if p.Replayed == 1 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || p.Replayed != 1 || !p.Done {
		t.Errorf("ReplayAll cut short = %+v, %v; want 1 replayed and the context's error", p, err)
	}
}

func testReplayAllStopsOnFailure(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	recs := fill(t, s, "stop.dlq", "s", 6, nil)
	var mu sync.Mutex
	calls := 0
	pub := &publisher{}
	pub.during = func(dlq.Entry, string) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 3 {
			pub.setFail(errBroker)
		}
	}
	ops := newOps(t, opsConfig(s, pub))
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "stop.dlq"}, operate.ReplayAllOptions{})
	if !errors.Is(err, errBroker) {
		t.Fatalf("ReplayAll = %v, want the broker's error", err)
	}
	if p.Replayed != 2 || p.Failed != 1 || !p.Done {
		t.Errorf("progress = %+v, want 2 replayed, 1 failed, done", p)
	}
	for i, r := range recs {
		want := dlq.StatusPending
		if i < 2 {
			want = dlq.StatusReplayed
		}
		if got := get(t, s, "stop.dlq", r.ID); got.Status != want {
			t.Errorf("entry %d is %s, want %s", i, got.Status, want)
		}
	}
	if got := auditActions(t, s, "stop.dlq", recs[2].ID); len(got) != 1 || got[0] != dlq.ActionReplayFailed {
		t.Errorf("audit of the failed entry = %v, want replay_failed", got)
	}
	// Resumes once the broker is back.
	pub.setFail(nil)
	pub.during = nil
	p, err = ops.ReplayAll(ctx, dlq.Query{DLQ: "stop.dlq"}, operate.ReplayAllOptions{})
	if err != nil || p.Replayed != 4 {
		t.Errorf("resumed ReplayAll = %+v, %v; want 4", p, err)
	}
}

// testReplayAllClaimsStayFresh: a replay-all whose claimed entries wait
// longer than ReconcileAfter for their turn (a slow broker) records what
// it sent and claims the rest again, so that Reconcile, running all the
// while, never takes a claimed entry for an interrupted replay: every
// entry is published once, none reconciled.
func testReplayAllClaimsStayFresh(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	const n = 12
	fill(t, s, "fresh.dlq", "f", n, nil)
	pub := &publisher{}
	cfg := opsConfig(s, pub)
	// ReplayTimeout leaves a publish ample time beyond its 120 ms (a busy
	// machine running -race: 250 ms against 40 once ran out in CI);
	// ReconcileAfter must only exceed it.
	cfg.ReplayTimeout, cfg.ReconcileAfter = time.Second, 1100*time.Millisecond
	ops := newOps(t, cfg)
	pub.during = func(dlq.Entry, string) {
		time.Sleep(120 * time.Millisecond) // a slow broker: 12 entries take longer than ReconcileAfter
	}
	// The reconciler runs all the while, beside the replay-all, as it does
	// in every replica.
	var reconciled atomic.Int64
	var reconcileErr error
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			m, err := ops.Reconcile(ctx)
			reconciled.Add(int64(m))
			if err != nil && reconcileErr == nil {
				reconcileErr = err
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "fresh.dlq"}, operate.ReplayAllOptions{Actor: "alice"})
	close(stop)
	<-stopped
	pub.mu.Lock()
	pub.during = nil
	pub.mu.Unlock()
	if err != nil || p.Replayed != n {
		t.Fatalf("ReplayAll = %+v, %v; want %d replayed", p, err, n)
	}
	if reconcileErr != nil || reconciled.Load() != 0 {
		t.Errorf("Reconcile replayed %d entries (%v) during the run, want none", reconciled.Load(), reconcileErr)
	}
	seen := map[string]int{}
	for _, c := range pub.published() {
		seen[c.from]++
	}
	if len(seen) != n {
		t.Errorf("%d distinct entries published, want %d", len(seen), n)
	}
	for from, k := range seen {
		if k != 1 {
			t.Errorf("%s published %d times", from, k)
		}
	}
	if c, err := s.Count(ctx, dlq.Query{DLQ: "fresh.dlq", Status: dlq.StatusReplayed}); err != nil || c != n {
		t.Errorf("%d entries replayed in the store (%v), want %d", c, err, n)
	}
}
