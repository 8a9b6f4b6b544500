package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// testGroups: entries are grouped by their failure fingerprint (error
// class, normalised message, worker), computed when stored; a group
// counts its live entries and pending ones, its first and last arrival,
// its newest entry and its arrivals per hour; Query.Group lists one group,
// and ReplayAll replays one.
func testGroups(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	const name = "grp.dlq"
	at := func(i int) time.Time { return base.Add(time.Duration(i) * 30 * time.Minute) }
	// A: bank rejections of billing, 5 live (10:30 … 12:30) and one
	// archived; B: timeouts of billing, 3 (one discarded); C: bank
	// rejections of ledger, 2.
	a := fill(t, s, name, "a", 5, func(i int, r *dlq.Record) { r.ReceivedAt = at(i) })
	old := record(name, "a-old", 0)
	old.ReceivedAt = base.Add(-48 * time.Hour)
	mustInsert(t, s, old)
	if n, err := s.Archive(ctx, name, base.Add(-24*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Archive = %d, %v; want 1", n, err)
	}
	b := fill(t, s, name, "b", 3, func(i int, r *dlq.Record) {
		r.Entry.ErrorClass, r.Entry.ErrorMessage = "db.Timeout", fmt.Sprintf("query 'q%d' timed out after %d ms", i, 100*i+7)
		r.ReceivedAt = at(i + 1)
	})
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: name, ID: b[0].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded,
		Actor: "t", Action: dlq.ActionDiscard, Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	c := fill(t, s, name, "c", 2, func(i int, r *dlq.Record) { r.Entry.Worker = "ledger"; r.ReceivedAt = at(i) })
	fill(t, s, "grp-other.dlq", "o", 3, nil) // another DLQ, same fingerprint as A

	fpA, fpB, fpC := dlq.Fingerprint(a[0].Entry), dlq.Fingerprint(b[0].Entry), dlq.Fingerprint(c[0].Entry)
	if fpA == fpB || fpA == fpC || fpB == fpC {
		t.Fatalf("fingerprints %s %s %s, want three", fpA, fpB, fpC)
	}
	for _, r := range slices.Concat(a, b, c) {
		if r.Fingerprint != dlq.Fingerprint(r.Entry) {
			t.Errorf("Insert returned %s with fingerprint %q, want %q", r.ID, r.Fingerprint, dlq.Fingerprint(r.Entry))
		}
		if got := get(t, s, name, r.ID); got.Fingerprint != r.Fingerprint {
			t.Errorf("Get(%s).Fingerprint = %q, want %q", r.ID, got.Fingerprint, r.Fingerprint)
		}
	}

	now := base.Add(3 * time.Hour) // 13:30: the hours run from 14:00 the day before
	groups, err := s.Groups(ctx, dlq.GroupQuery{DLQ: name, Now: now})
	if err != nil {
		t.Fatalf("Groups: %v", err)
	}
	var hourlyA, hourlyB, hourlyC [dlq.SparklineHours]int64
	hourlyA[20], hourlyA[21], hourlyA[22] = 1, 2, 2 // 10:30; 11:00, 11:30; 12:00, 12:30
	hourlyB[21], hourlyB[22] = 2, 1
	hourlyC[20], hourlyC[21] = 1, 1
	want := []dlq.Group{
		{Fingerprint: fpA, Message: "bank rejected transfer <n>", ErrorClass: "payout.BankError", Worker: "billing",
			Count: 5, Pending: 5, FirstSeen: at(0), LastSeen: at(4), SampleID: a[4].ID, Hourly: hourlyA},
		{Fingerprint: fpB, Message: "query <q> timed out after <n> ms", ErrorClass: "db.Timeout", Worker: "billing",
			Count: 3, Pending: 2, FirstSeen: at(1), LastSeen: at(3), SampleID: b[2].ID, Hourly: hourlyB},
		{Fingerprint: fpC, Message: "bank rejected transfer <n>", ErrorClass: "payout.BankError", Worker: "ledger",
			Count: 2, Pending: 2, FirstSeen: at(0), LastSeen: at(1), SampleID: c[1].ID, Hourly: hourlyC},
	}
	if len(groups) != len(want) {
		t.Fatalf("Groups = %+v, want %d groups", groups, len(want))
	}
	for i := range want {
		g := groups[i]
		if g.Fingerprint != want[i].Fingerprint || g.Message != want[i].Message || g.ErrorClass != want[i].ErrorClass ||
			g.Worker != want[i].Worker || g.Count != want[i].Count || g.Pending != want[i].Pending ||
			!g.FirstSeen.Equal(want[i].FirstSeen) || !g.LastSeen.Equal(want[i].LastSeen) || g.SampleID != want[i].SampleID ||
			g.Hourly != want[i].Hourly {
			t.Errorf("group %d = %+v\nwant %+v", i, g, want[i])
		}
	}
	if top, err := s.Groups(ctx, dlq.GroupQuery{DLQ: name, Now: now, Limit: 1}); err != nil || len(top) != 1 || top[0].Fingerprint != fpA {
		t.Errorf("Groups(limit 1) = %+v, %v; want group A", top, err)
	}
	if none, err := s.Groups(ctx, dlq.GroupQuery{DLQ: "grp-empty.dlq", Now: now}); err != nil || len(none) != 0 {
		t.Errorf("Groups of an empty DLQ = %+v, %v", none, err)
	}
	// Outside the last 24 hours, arrivals are counted but not drawn.
	if later, err := s.Groups(ctx, dlq.GroupQuery{DLQ: name, Now: now.Add(48 * time.Hour)}); err != nil || len(later) != 3 ||
		later[0].Hourly != [dlq.SparklineHours]int64{} || later[0].Count != 5 {
		t.Errorf("Groups two days later = %+v, %v; want the counts without arrivals", later, err)
	}
	for _, q := range []dlq.GroupQuery{{}, {DLQ: name, Limit: -1}, {DLQ: name, Limit: dlq.MaxGroupLimit + 1}} {
		if _, err := s.Groups(ctx, q); !errors.Is(err, dlq.ErrInvalidQuery) {
			t.Errorf("Groups(%+v) = %v, want ErrInvalidQuery", q, err)
		}
	}

	// group= lists one group, counts it, and is checked.
	if got := ids(listAll(t, s, dlq.Query{DLQ: name, Group: fpB, Limit: 2})); !slices.Equal(got, ids(b)) {
		t.Errorf("List(group B) = %v, want %v", got, ids(b))
	}
	if n, err := s.Count(ctx, dlq.Query{DLQ: name, Group: fpA}); err != nil || n != 5 {
		t.Errorf("Count(group A) = %d, %v; want 5 (the archived one aside)", n, err)
	}
	if n, err := s.Count(ctx, dlq.Query{DLQ: name, Group: fpA, Status: dlq.StatusArchived}); err != nil || n != 1 {
		t.Errorf("Count(group A, archived) = %d, %v; want 1", n, err)
	}
	if _, err := s.List(ctx, dlq.Query{DLQ: name, Group: "not-a-fingerprint"}); !errors.Is(err, dlq.ErrInvalidQuery) {
		t.Errorf("List(bad group) = %v, want ErrInvalidQuery", err)
	}

	// Replaying one group replays its pending entries only.
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: name, Group: fpB}, operate.ReplayAllOptions{Actor: "alice"})
	if err != nil || p.Total != 2 || p.Replayed != 2 {
		t.Fatalf("ReplayAll(group B) = %+v, %v; want 2 replayed", p, err)
	}
	for _, r := range slices.Concat(a, c) {
		if got := get(t, s, name, r.ID); got.Status != dlq.StatusPending {
			t.Errorf("%s of another group is %s after replaying group B", r.ID, got.Status)
		}
	}

	// Discarding one group discards its pending entries, each audited
	// with the reason; a reason is required.
	if _, err := ops.DiscardAll(ctx, dlq.Query{DLQ: name, Group: fpC}, operate.DiscardAllOptions{Actor: "bob"}); !errors.Is(err, operate.ErrReasonRequired) {
		t.Errorf("DiscardAll without a reason = %v, want ErrReasonRequired", err)
	}
	p, err = ops.DiscardAll(ctx, dlq.Query{DLQ: name, Group: fpC}, operate.DiscardAllOptions{Actor: "bob", Reason: "known ledger bug"})
	if err != nil || p.Total != 2 || p.Replayed != 2 || !p.Done {
		t.Fatalf("DiscardAll(group C) = %+v, %v; want 2 discarded", p, err)
	}
	for _, r := range c {
		got := get(t, s, name, r.ID)
		trail, err := s.Audit(ctx, name, r.ID)
		if err != nil || got.Status != dlq.StatusDiscarded || got.StatusBy != "bob" || len(trail) != 1 ||
			trail[0].Action != dlq.ActionDiscard || trail[0].Reason != "known ledger bug" || trail[0].Actor != "bob" {
			t.Errorf("%s after DiscardAll: %s by %s, audit %+v, %v", r.ID, got.Status, got.StatusBy, trail, err)
		}
	}
	if got := get(t, s, name, a[0].ID); got.Status != dlq.StatusPending {
		t.Errorf("%s of group A is %s after discarding group C", a[0].ID, got.Status)
	}
}
