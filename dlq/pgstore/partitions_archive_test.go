package pgstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// A past week goes to the archive as a partition once every DLQ with a
// finite retention in it is past it: the entries of a DLQ kept forever,
// those not past their retention and the replaying ones stay live (in
// partition 0); pending ones are reported; counts stay exact, archived
// entries read by id and their identities stay duplicates.
func TestArchivePeriods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().Add(-10 * 7 * 24 * time.Hour)
	s, schema, clock := openClocked(t, start)
	w := week(start)

	type entry struct {
		dlq, identity string
		status        dlq.Status
		receivedLater bool // received at the end of the test, not past retention
		want          string
	}
	entries := []entry{
		{"short.dlq", "p1", dlq.StatusPending, false, "archived"},
		{"short.dlq", "p2", dlq.StatusPending, false, "archived"},
		{"short.dlq", "r1", dlq.StatusReplayed, false, "archived"},
		{"short.dlq", "d1", dlq.StatusDiscarded, false, "archived"},
		{"short.dlq", "busy", dlq.StatusReplaying, false, "dlq_entries_p0"},
		{"short.dlq", "late", dlq.StatusPending, true, "dlq_entries_p0"},
		{"forever.dlq", "f1", dlq.StatusPending, false, "dlq_entries_p0"},
		{"forever.dlq", "f2", dlq.StatusReplayed, false, "dlq_entries_p0"},
	}
	end := start.Add(6 * 7 * 24 * time.Hour)
	ids := map[string]string{}
	for _, e := range entries {
		rec := dlq.Record{Broker: "kafka", DLQ: e.dlq, Identity: e.identity}
		if e.receivedLater {
			rec.ReceivedAt = end
		}
		r, inserted, err := s.Insert(ctx, rec)
		if err != nil || !inserted {
			t.Fatalf("Insert = %v, %v", inserted, err)
		}
		ids[e.identity] = r.ID
		if got, want := partitionOf(t, s, e.dlq, r.ID), fmt.Sprint("dlq_entries_w", w); got != want {
			t.Fatalf("entry in %s, want %s", got, want)
		}
		if e.status != dlq.StatusPending {
			mid := dlq.StatusReplaying
			if e.status == dlq.StatusDiscarded {
				mid = dlq.StatusDiscarded
			}
			if _, err := s.Transition(ctx, dlq.Transition{DLQ: e.dlq, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: mid}); err != nil {
				t.Fatal(err)
			}
			if e.status == dlq.StatusReplayed {
				if _, err := s.Transition(ctx, dlq.Transition{DLQ: e.dlq, ID: r.ID, From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	retention := map[string]time.Duration{"short.dlq": 14 * 24 * time.Hour} // forever.dlq: absent
	// Not yet: the week is not past short.dlq's retention.
	clock.Store(&[]time.Time{start.Add(7 * 24 * time.Hour)}[0])
	got, err := s.ArchivePeriods(ctx, retention)
	if err != nil || got.Partitions != 0 || got.Kept != 0 {
		t.Fatalf("ArchivePeriods a week later = %+v, %v; want nothing done", got, err)
	}
	checkCounts(t, schema)

	clock.Store(&end)
	got, err = s.ArchivePeriods(ctx, retention)
	if err != nil {
		t.Fatal(err)
	}
	// The week and the two (empty) ahead of it that Open made.
	if got.Partitions != 3 || got.Kept != 4 || got.Archived["short.dlq"] != 4 || got.Pending["short.dlq"] != 2 || len(got.Archived) != 1 {
		t.Errorf("ArchivePeriods = %+v, want 3 partitions, 4 kept, 4 archived of short.dlq of which 2 pending", got)
	}
	for _, e := range entries {
		table := partitionOf(t, s, e.dlq, ids[e.identity])
		r, err := s.Get(ctx, e.dlq, ids[e.identity])
		switch {
		case err != nil:
			t.Errorf("Get %s: %v", e.identity, err)
		case e.want == "archived" && (table != fmt.Sprint("dlq_entries_archive_w", w) || r.Status != dlq.StatusArchived):
			t.Errorf("%s is %s in %s, want archived in the archive's partition", e.identity, r.Status, table)
		case e.want != "archived" && (table != e.want || r.Status != e.status):
			t.Errorf("%s is %s in %s, want %s in %s", e.identity, r.Status, table, e.status, e.want)
		}
		// A redelivery is a duplicate, archived or not.
		again, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: e.dlq, Identity: e.identity})
		if err != nil || inserted || again.ID != ids[e.identity] {
			t.Errorf("Insert of %s again = %s, %v, %v; want the stored one", e.identity, again.ID, inserted, err)
		}
	}
	counts := checkCounts(t, schema)
	if counts["short.dlq/archived/warning"] != 4 || counts["short.dlq/pending/warning"] != 1 || counts["forever.dlq/pending/warning"] != 1 {
		t.Errorf("counts = %v", counts)
	}
	// The week's partition is not made again; the entries kept transition.
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := s.Pool().QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, fmt.Sprint("dlq_entries_w", w)).Scan(&exists); err != nil || exists {
		t.Errorf("the archived week's live partition exists again: %v, %v", exists, err)
	}
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "short.dlq", ID: ids["busy"], From: []dlq.Status{dlq.StatusReplaying}, To: dlq.StatusReplayed}); err != nil {
		t.Errorf("Transition of a kept entry: %v", err)
	}
	checkCounts(t, schema)
}

// A past week holding only entries of DLQs kept forever stays live as it
// is (nothing moves); the empty weeks after it go to the archive.
func TestArchivePeriodsKeepsForeverWeeks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now().Add(-10 * 7 * 24 * time.Hour)
	s, schema, clock := openClocked(t, start)
	r, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: "forever.dlq", Identity: "f"})
	if err != nil {
		t.Fatal(err)
	}
	end := start.Add(6 * 7 * 24 * time.Hour)
	clock.Store(&end)
	got, err := s.ArchivePeriods(ctx, map[string]time.Duration{"short.dlq": time.Hour})
	if err != nil || got.Partitions != 2 || got.Kept != 0 || len(got.Archived) != 0 {
		t.Errorf("ArchivePeriods = %+v, %v; want the 2 empty weeks archived, nothing moved", got, err)
	}
	if table, want := partitionOf(t, s, "forever.dlq", r.ID), fmt.Sprint("dlq_entries_w", week(start)); table != want {
		t.Errorf("the forever entry is in %s, want %s", table, want)
	}
	checkCounts(t, schema)
}

// openClocked opens a store in a fresh schema whose clock reads start
// until the test stores another time in the returned clock.
func openClocked(t *testing.T, start time.Time) (*pgstore.Store, string, *atomic.Pointer[time.Time]) {
	t.Helper()
	schema := testenv.Schema(t)
	clock := new(atomic.Pointer[time.Time])
	clock.Store(&start)
	s, err := pgstore.Open(context.Background(), testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 4,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return *clock.Load() }})
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, schema, clock
}
