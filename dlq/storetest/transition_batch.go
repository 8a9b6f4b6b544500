package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/redrive/redrive/dlq"
)

// testTransitionBatch: a batch changes the entries in the status (and
// version) asked, with an audit row each carrying its own reason, and
// leaves the others (another status, another version, unknown, another
// DLQ) untouched and unreturned; invalid batches change nothing.
func testTransitionBatch(t *testing.T, s dlq.Store) {
	bt, ok := s.(dlq.BatchTransitioner)
	if !ok {
		t.Skip("the store is not a dlq.BatchTransitioner")
	}
	ctx := context.Background()
	rs := fill(t, s, "tb.dlq", "b", 6, func(i int, r *dlq.Record) {
		if i%2 == 1 { // an id without time, as Kafka's
			r.Broker, r.ID = offsetBackend, offsetID(0, int64(i))
		}
	})
	other := fill(t, s, "tb2.dlq", "o", 1, nil)[0]
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "tb.dlq", ID: rs[2].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "a", Action: dlq.ActionDiscard, Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	entries := []dlq.BatchEntry{
		{ID: rs[0].ID, Reason: "r0"},
		{ID: rs[1].ID, Reason: "r1", IfVersion: rs[1].Version},
		{ID: rs[2].ID, Reason: "r2"},                // discarded
		{ID: rs[3].ID, Reason: "r3", IfVersion: 99}, // another version
		{ID: other.ID, Reason: "other"},             // another DLQ
		{ID: "nope", Reason: "unknown"},             // unknown
		{ID: rs[5].ID, Reason: "r5", IfVersion: rs[5].Version},
	}
	got, err := bt.TransitionBatch(ctx, dlq.BatchTransition{DLQ: "tb.dlq", From: dlq.StatusPending, To: dlq.StatusReplaying,
		Actor: "op", Action: dlq.ActionReplay, At: base, Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, r := range got {
		changed = append(changed, r.ID)
		if r.Status != dlq.StatusReplaying || r.StatusBy != "op" || !r.StatusChangedAt.Equal(base) || r.Version != rs[0].Version+1 {
			t.Errorf("returned %s: %s by %s at %v, version %d; want replaying by op at %v, version %d",
				r.ID, r.Status, r.StatusBy, r.StatusChangedAt, r.Version, base, rs[0].Version+1)
		}
	}
	slices.Sort(changed)
	want := []string{rs[0].ID, rs[1].ID, rs[5].ID}
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
	for i, r := range rs {
		cur := get(t, s, "tb.dlq", r.ID)
		wantStatus := map[int]dlq.Status{0: dlq.StatusReplaying, 1: dlq.StatusReplaying, 2: dlq.StatusDiscarded, 5: dlq.StatusReplaying}[i]
		if wantStatus == "" {
			wantStatus = dlq.StatusPending
		}
		if cur.Status != wantStatus {
			t.Errorf("entry %d is %s, want %s", i, cur.Status, wantStatus)
		}
		a, err := s.Audit(ctx, "tb.dlq", r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, e := range a {
			if e.Action == dlq.ActionReplay {
				reasons = append(reasons, e.Reason)
				if e.From != dlq.StatusPending || e.To != dlq.StatusReplaying || e.Actor != "op" {
					t.Errorf("entry %d: audit %+v", i, e)
				}
			}
		}
		if wantReasons := map[int][]string{0: {"r0"}, 1: {"r1"}, 5: {"r5"}}[i]; !slices.Equal(reasons, wantReasons) {
			t.Errorf("entry %d: replay audit reasons %v, want %v", i, reasons, wantReasons)
		}
	}
	if cur := get(t, s, "tb2.dlq", other.ID); cur.Status != dlq.StatusPending {
		t.Errorf("the entry of another DLQ is %s, want pending", cur.Status)
	}

	// Without an action: no audit row.
	if got, err := bt.TransitionBatch(ctx, dlq.BatchTransition{DLQ: "tb.dlq", From: dlq.StatusReplaying, To: dlq.StatusPending,
		Actor: "op", Entries: []dlq.BatchEntry{{ID: rs[0].ID}}}); err != nil || len(got) != 1 {
		t.Fatalf("back to pending: %d records, %v", len(got), err)
	}
	if a := auditActions(t, s, "tb.dlq", rs[0].ID); len(a) != 1 {
		t.Errorf("audit of entry 0 = %v, want the replay row only", a)
	}

	// Invalid batches change nothing.
	for _, bad := range []dlq.BatchTransition{
		{DLQ: "tb.dlq", From: dlq.StatusPending, To: dlq.StatusArchived, Entries: []dlq.BatchEntry{{ID: rs[4].ID}}},
		{DLQ: "tb.dlq", From: dlq.StatusArchived, To: dlq.StatusPending, Entries: []dlq.BatchEntry{{ID: rs[4].ID}}},
		{DLQ: "../x", From: dlq.StatusPending, To: dlq.StatusDiscarded, Entries: []dlq.BatchEntry{{ID: rs[4].ID}}},
		{DLQ: "tb.dlq", From: dlq.StatusPending, To: dlq.StatusDiscarded, Entries: []dlq.BatchEntry{{ID: rs[4].ID}, {ID: rs[4].ID}}},
		{DLQ: "tb.dlq", From: dlq.StatusPending, To: dlq.StatusDiscarded, Entries: make([]dlq.BatchEntry, dlq.MaxBatchTransition+1)},
	} {
		if _, err := bt.TransitionBatch(ctx, bad); !errors.Is(err, dlq.ErrInvalidQuery) {
			t.Errorf("TransitionBatch(%s -> %s, %d entries of %q) = %v, want ErrInvalidQuery", bad.From, bad.To, len(bad.Entries), bad.DLQ, err)
		}
	}
	if cur := get(t, s, "tb.dlq", rs[4].ID); cur.Status != dlq.StatusPending {
		t.Errorf("after invalid batches entry 4 is %s, want pending", cur.Status)
	}
}
