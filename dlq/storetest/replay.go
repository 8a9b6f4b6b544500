package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

func testTransition(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	r := fill(t, s, "tr.dlq", "t", 1, nil)[0]
	pending := []dlq.Status{dlq.StatusPending}

	// Wrong from-status: nothing changes, no audit row.
	cur, err := s.Transition(ctx, dlq.Transition{DLQ: "tr.dlq", ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed, Actor: "a", Action: dlq.ActionReplay})
	if !errors.Is(err, dlq.ErrNotPending) {
		t.Fatalf("Transition from the wrong status = %v, want ErrNotPending", err)
	}
	if cur.Status != dlq.StatusPending || cur.ID != r.ID {
		t.Errorf("the failed transition returned %s %s, want the current pending record", cur.ID, cur.Status)
	}
	// Wrong version.
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "tr.dlq", ID: r.ID, From: pending, To: dlq.StatusDiscarded, IfVersion: 7, Actor: "a", Action: dlq.ActionDiscard}); !errors.Is(err, dlq.ErrNotPending) {
		t.Fatalf("Transition of the wrong version = %v, want ErrNotPending", err)
	}
	if got := auditActions(t, s, "tr.dlq", r.ID); len(got) != 0 {
		t.Errorf("failed transitions wrote audit rows %v", got)
	}
	// Unknown entries.
	for _, id := range []string{"nope", "../../etc", "1' OR '1'='1"} {
		if _, err := s.Transition(ctx, dlq.Transition{DLQ: "tr.dlq", ID: id, From: pending, To: dlq.StatusDiscarded}); !errors.Is(err, dlq.ErrNotFound) {
			t.Errorf("Transition(%q) = %v, want ErrNotFound", id, err)
		}
	}
	// Invalid target.
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "tr.dlq", ID: r.ID, From: pending, To: dlq.StatusArchived}); err == nil {
		t.Error("Transition to archived succeeded")
	}

	// A transition without audit row, then one with.
	at := base.Add(time.Hour)
	got, err := s.Transition(ctx, dlq.Transition{DLQ: "tr.dlq", ID: r.ID, From: pending, To: dlq.StatusReplaying, IfVersion: 1, Actor: "alice", At: at})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != dlq.StatusReplaying || got.Version != 2 || got.StatusBy != "alice" || !got.StatusChangedAt.Equal(at) {
		t.Errorf("after transition: %s v%d by %q at %v", got.Status, got.Version, got.StatusBy, got.StatusChangedAt)
	}
	checkBrief(t, got, r.Entry)
	got, err = s.Transition(ctx, dlq.Transition{DLQ: "tr.dlq", ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed, Actor: "alice", Action: dlq.ActionReplay, Reason: "why not", At: at.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if back := get(t, s, "tr.dlq", r.ID); back.Status != dlq.StatusReplayed || back.Version != 3 {
		t.Errorf("Get after transitions = %s v%d, want replayed v3", back.Status, back.Version)
	}
	trail, err := s.Audit(ctx, "tr.dlq", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 1 {
		t.Fatalf("audit trail = %+v, want one row", trail)
	}
	a := trail[0]
	if a.Action != dlq.ActionReplay || a.Actor != "alice" || a.DLQ != "tr.dlq" || a.EntryID != r.ID ||
		a.From != dlq.StatusReplaying || a.To != dlq.StatusReplayed || a.Reason != "why not" || !a.At.Equal(at.Add(time.Second)) || a.Seq <= 0 {
		t.Errorf("audit row = %+v", a)
	}
	if trail, _ := s.Audit(ctx, "tr.dlq", "unknown"); len(trail) != 0 {
		t.Errorf("audit of an unknown entry = %+v", trail)
	}
}

func testReplay(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	recs := fill(t, s, "replay.dlq", "r", 2, nil)
	r := recs[0]
	pub := &publisher{}
	var during dlq.Record
	pub.during = func(e dlq.Entry, from string) {
		during, _ = s.Get(ctx, "replay.dlq", r.ID)
	}
	ops := newOps(t, opsConfig(s, pub))
	got, err := ops.Replay(ctx, "replay.dlq", r.ID, "alice")
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if during.Status != dlq.StatusReplaying {
		t.Errorf("status while the broker was called = %q, want replaying (the intent)", during.Status)
	}
	calls := pub.published()
	if len(calls) != 1 {
		t.Fatalf("%d republish calls, want 1", len(calls))
	}
	checkEntry(t, calls[0].entry, r.Entry)
	if want := "replay.dlq/" + r.ID; calls[0].from != want {
		t.Errorf("replayedFrom = %q, want %q", calls[0].from, want)
	}
	if got.Status != dlq.StatusReplayed || got.StatusBy != "alice" {
		t.Errorf("Replay returned %s by %q, want replayed by alice", got.Status, got.StatusBy)
	}
	rec, trail, err := ops.Show(ctx, "replay.dlq", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != dlq.StatusReplayed || len(trail) != 1 || trail[0].Action != dlq.ActionReplay || trail[0].Actor != "alice" ||
		trail[0].From != dlq.StatusReplaying || trail[0].To != dlq.StatusReplayed {
		t.Errorf("Show = %s with trail %+v; want replayed with one replay row by alice", rec.Status, trail)
	}

	// Not pending any more.
	if _, err := ops.Replay(ctx, "replay.dlq", r.ID, "bob"); !errors.Is(err, dlq.ErrNotPending) {
		t.Errorf("second Replay = %v, want ErrNotPending", err)
	}
	if _, err := ops.Discard(ctx, "replay.dlq", r.ID, "bob", "late"); !errors.Is(err, dlq.ErrNotPending) {
		t.Errorf("Discard of a replayed entry = %v, want ErrNotPending", err)
	}
	if _, err := ops.Replay(ctx, "replay.dlq", "nope", "bob"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Replay(unknown) = %v, want ErrNotFound", err)
	}
	if _, _, err := ops.Show(ctx, "replay.dlq", "nope"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Show(unknown) = %v, want ErrNotFound", err)
	}
	if n := len(pub.published()); n != 1 {
		t.Errorf("%d republish calls after refused operations, want still 1", n)
	}
	if got := auditActions(t, s, "replay.dlq", r.ID); !slices.Equal(got, []string{dlq.ActionReplay}) {
		t.Errorf("audit after refused operations = %v", got)
	}
	// The other entry is untouched.
	if other := get(t, s, "replay.dlq", recs[1].ID); other.Status != dlq.StatusPending {
		t.Errorf("other entry is %s", other.Status)
	}

	// A read-only Ops cannot replay.
	ro := newOps(t, opsConfig(s, nil))
	if _, err := ro.Replay(ctx, "replay.dlq", recs[1].ID, "x"); !errors.Is(err, operate.ErrNoRepublisher) {
		t.Errorf("Replay without republisher = %v, want ErrNoRepublisher", err)
	}
	if other := get(t, s, "replay.dlq", recs[1].ID); other.Status != dlq.StatusPending {
		t.Errorf("read-only replay left the entry %s", other.Status)
	}
}

func testReplayFailure(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	r := fill(t, s, "fail.dlq", "f", 1, nil)[0]
	pub := &publisher{fail: errBroker}
	ops := newOps(t, opsConfig(s, pub))
	_, err := ops.Replay(ctx, "fail.dlq", r.ID, "alice")
	if !errors.Is(err, errBroker) || !errors.Is(err, operate.ErrReplayFailed) {
		t.Fatalf("Replay with a failing broker = %v, want it to wrap ErrReplayFailed and the broker's error", err)
	}
	got := get(t, s, "fail.dlq", r.ID)
	if got.Status != dlq.StatusPending {
		t.Errorf("after a failed replay the entry is %s, want pending", got.Status)
	}
	trail, err := s.Audit(ctx, "fail.dlq", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 1 || trail[0].Action != dlq.ActionReplayFailed || !strings.Contains(trail[0].Reason, errBroker.Error()) {
		t.Fatalf("audit after a failed replay = %+v, want one replay_failed row with the error", trail)
	}
	// Once the broker is back the operator replays again.
	pub.setFail(nil)
	if _, err := ops.Replay(ctx, "fail.dlq", r.ID, "alice"); err != nil {
		t.Fatalf("Replay after recovery: %v", err)
	}
	if got := auditActions(t, s, "fail.dlq", r.ID); !slices.Equal(got, []string{dlq.ActionReplayFailed, dlq.ActionReplay}) {
		t.Errorf("audit = %v, want replay_failed, replay", got)
	}

	// A context that ends during the call: not recorded as replayed.
	r2 := fill(t, s, "fail.dlq", "g", 1, nil)[0]
	cctx, cancel := context.WithCancel(ctx)
	pub.during = func(dlq.Entry, string) { cancel() }
	if _, err := ops.Replay(cctx, "fail.dlq", r2.ID, "alice"); !errors.Is(err, context.Canceled) {
		t.Errorf("Replay with a context cancelled mid-way = %v, want context.Canceled", err)
	}
	if got := get(t, s, "fail.dlq", r2.ID); got.Status != dlq.StatusPending {
		t.Errorf("after a cancelled replay the entry is %s, want pending", got.Status)
	}
	if got := auditActions(t, s, "fail.dlq", r2.ID); !slices.Equal(got, []string{dlq.ActionReplayFailed}) {
		t.Errorf("audit after a cancelled replay = %v, want replay_failed", got)
	}
}

func testReplayConcurrent(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	r := fill(t, s, "cr.dlq", "c", 1, nil)[0]
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	const n = 8
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		ok, other int
		start     = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := ops.Replay(ctx, "cr.dlq", r.ID, "racer")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, dlq.ErrNotPending):
			default:
				other++
				t.Errorf("Replay: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok != 1 || len(pub.published()) != 1 {
		t.Errorf("%d concurrent replays: %d succeeded, %d republished; want 1 and 1", n, ok, len(pub.published()))
	}
	if got := auditActions(t, s, "cr.dlq", r.ID); !slices.Equal(got, []string{dlq.ActionReplay}) {
		t.Errorf("audit = %v, want one replay", got)
	}
}

func testDiscard(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	r := fill(t, s, "disc.dlq", "d", 1, nil)[0]
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	for _, reason := range []string{"", "   "} {
		if _, err := ops.Discard(ctx, "disc.dlq", r.ID, "alice", reason); !errors.Is(err, operate.ErrReasonRequired) {
			t.Errorf("Discard with reason %q = %v, want ErrReasonRequired", reason, err)
		}
	}
	if got := get(t, s, "disc.dlq", r.ID); got.Status != dlq.StatusPending {
		t.Fatalf("refused discard left the entry %s", got.Status)
	}
	got, err := ops.Discard(ctx, "disc.dlq", r.ID, "alice", "  duplicate of order 42 ")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != dlq.StatusDiscarded || got.StatusBy != "alice" {
		t.Errorf("Discard returned %s by %q", got.Status, got.StatusBy)
	}
	_, trail, err := ops.Show(ctx, "disc.dlq", r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 1 || trail[0].Action != dlq.ActionDiscard || trail[0].Actor != "alice" || trail[0].Reason != "duplicate of order 42" ||
		trail[0].From != dlq.StatusPending || trail[0].To != dlq.StatusDiscarded {
		t.Errorf("audit = %+v, want one discard row by alice with the reason", trail)
	}
	if _, err := ops.Discard(ctx, "disc.dlq", r.ID, "bob", "again"); !errors.Is(err, dlq.ErrNotPending) {
		t.Errorf("second Discard = %v, want ErrNotPending", err)
	}
	if _, err := ops.Replay(ctx, "disc.dlq", r.ID, "bob"); !errors.Is(err, dlq.ErrNotPending) {
		t.Errorf("Replay of a discarded entry = %v, want ErrNotPending", err)
	}
	if _, err := ops.Discard(ctx, "disc.dlq", "nope", "bob", "x"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Discard(unknown) = %v, want ErrNotFound", err)
	}
	if len(pub.published()) != 0 {
		t.Error("a discard republished")
	}
	// A long reason and actor are cut, not refused.
	r2 := fill(t, s, "disc.dlq", "e", 1, nil)[0]
	got, err = ops.Discard(ctx, "disc.dlq", r2.ID, strings.Repeat("é", 200), strings.Repeat("x", 5000))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.StatusBy) > dlq.MaxActorLen {
		t.Errorf("actor of %d bytes kept, want at most dlq.MaxActorLen (%d)", len(got.StatusBy), dlq.MaxActorLen)
	}
}

// crash leaves r replaying, as a process that died between the intent and
// the broker's confirm would.
func crash(t *testing.T, s dlq.Store, r dlq.Record, actor string, at time.Time) {
	t.Helper()
	if _, err := s.Transition(context.Background(), dlq.Transition{DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying, Actor: actor, At: at}); err != nil {
		t.Fatal(err)
	}
}

func testReconcile(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	recs := fill(t, s, "rec.dlq", "r", 3, nil)
	now := time.Now()
	crash(t, s, recs[0], "alice", now.Add(-10*time.Minute)) // abandoned
	crash(t, s, recs[1], "bob", now.Add(-10*time.Second))   // maybe in progress elsewhere
	pub := &publisher{}
	cfg := opsConfig(s, pub)
	cfg.Now = func() time.Time { return now }
	ops := newOps(t, cfg)

	n, err := ops.Reconcile(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Reconcile = %d, %v; want 1", n, err)
	}
	calls := pub.published()
	if len(calls) != 1 || calls[0].from != "rec.dlq/"+recs[0].ID {
		t.Fatalf("republished %+v, want only %s", calls, recs[0].ID)
	}
	checkEntry(t, calls[0].entry, recs[0].Entry)
	got := get(t, s, "rec.dlq", recs[0].ID)
	if got.Status != dlq.StatusReplayed || got.StatusBy != dlq.ReconcileActor {
		t.Errorf("reconciled entry is %s by %q, want replayed by %s", got.Status, got.StatusBy, dlq.ReconcileActor)
	}
	trail, err := s.Audit(ctx, "rec.dlq", recs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(trail) != 1 || trail[0].Action != dlq.ActionReconcile || trail[0].Actor != dlq.ReconcileActor ||
		!strings.Contains(trail[0].Reason, "alice") || !strings.Contains(trail[0].Reason, "twice") {
		t.Errorf("audit of the reconciled entry = %+v, want one reconcile row naming alice and the possible duplicate", trail)
	}
	if got := get(t, s, "rec.dlq", recs[1].ID); got.Status != dlq.StatusReplaying {
		t.Errorf("a young replaying entry became %s", got.Status)
	}
	if got := get(t, s, "rec.dlq", recs[2].ID); got.Status != dlq.StatusPending {
		t.Errorf("a pending entry became %s", got.Status)
	}

	// Nothing left: a second pass replays nothing.
	if n, err := ops.Reconcile(ctx); err != nil || n != 0 {
		t.Errorf("second Reconcile = %d, %v; want 0", n, err)
	}
	// Later, the young one is abandoned too; two instances race for it.
	now = now.Add(time.Hour)
	var wg sync.WaitGroup
	total := make(chan int, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := ops.Reconcile(ctx)
			if err != nil {
				t.Errorf("Reconcile: %v", err)
			}
			total <- n
		}()
	}
	wg.Wait()
	close(total)
	sum := 0
	for n := range total {
		sum += n
	}
	if sum != 1 || len(pub.published()) != 2 {
		t.Errorf("two racing reconcilers replayed %d (republished %d in all); want 1 (2 in all)", sum, len(pub.published()))
	}
	if got := auditActions(t, s, "rec.dlq", recs[1].ID); !slices.Equal(got, []string{dlq.ActionReconcile}) {
		t.Errorf("audit of the raced entry = %v, want one reconcile", got)
	}
}

func testReconcileFailure(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	r := fill(t, s, "recf.dlq", "r", 1, nil)[0]
	crash(t, s, r, "alice", time.Now().Add(-time.Hour))
	pub := &publisher{fail: errBroker}
	ops := newOps(t, opsConfig(s, pub))
	if _, err := ops.Reconcile(ctx); !errors.Is(err, errBroker) {
		t.Fatalf("Reconcile with a failing broker = %v, want the broker's error", err)
	}
	if got := get(t, s, "recf.dlq", r.ID); got.Status != dlq.StatusReplaying {
		t.Errorf("after a failed reconcile the entry is %s, want still replaying", got.Status)
	}
	if got := auditActions(t, s, "recf.dlq", r.ID); len(got) != 0 {
		t.Errorf("a failed reconcile wrote audit rows %v", got)
	}
	// The failed attempt claimed the entry a moment ago: the next pass
	// waits for ReconcileAfter.
	pub.setFail(nil)
	later := newOps(t, func() operate.Config {
		c := opsConfig(s, pub)
		c.Now = func() time.Time { return time.Now().Add(time.Hour) }
		return c
	}())
	if n, err := ops.Reconcile(ctx); err != nil || n != 0 {
		t.Errorf("immediate Reconcile = %d, %v; want 0 (the claim is fresh)", n, err)
	}
	if n, err := later.Reconcile(ctx); err != nil || n != 1 {
		t.Errorf("later Reconcile = %d, %v; want 1", n, err)
	}
	if got := get(t, s, "recf.dlq", r.ID); got.Status != dlq.StatusReplayed {
		t.Errorf("entry is %s, want replayed", got.Status)
	}
}
