package pgstore_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Entries stored before schema version 5 get their fingerprint from the
// batched backfill, which resumes where it stopped; meanwhile they form
// one group without a fingerprint, afterwards the groups of their
// messages.
func TestFingerprintBackfill(t *testing.T) {
	ctx := context.Background()
	schema := testenv.Schema(t)
	const n = 1500 // a batch and a half
	version2Schema(t, schema, n)
	s, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 4, BackfillManual: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	blank := func() (live, archived int) {
		t.Helper()
		if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM dlq_entries WHERE fingerprint = ''),
			(SELECT count(*) FROM dlq_entries_archive WHERE fingerprint = '')`).Scan(&live, &archived); err != nil {
			t.Fatal(err)
		}
		return live, archived
	}
	if l, a := blank(); l != n || a != 40 {
		t.Fatalf("before the backfill: %d live and %d archived entries without a fingerprint, want %d and 40", l, a, n)
	}
	if done, err := s.BackfillFingerprints(ctx, 1); err != nil || done {
		t.Fatalf("one batch: done %v, %v; want more left", done, err)
	}
	if l, _ := blank(); l != n-pgstore.DefaultFingerprintBatch {
		t.Fatalf("after one batch: %d left, want %d", l, n-pgstore.DefaultFingerprintBatch)
	}
	if done, err := s.BackfillFingerprints(ctx, 0); err != nil || !done {
		t.Fatalf("the rest: done %v, %v", done, err)
	}
	if l, a := blank(); l != 0 || a != 0 {
		t.Fatalf("after the backfill: %d live and %d archived entries without a fingerprint", l, a)
	}
	r, err := s.Get(ctx, "old.dlq", "old7")
	if err != nil {
		t.Fatal(err)
	}
	if want := dlq.Fingerprint(dlq.Entry{ErrorMessage: "boom 7", Worker: "billing"}); r.Fingerprint != want {
		t.Errorf("old7's fingerprint %q, want %q", r.Fingerprint, want)
	}
	groups, err := s.Groups(ctx, dlq.GroupQuery{DLQ: "old.dlq", Now: time.Now()})
	if err != nil || len(groups) != 1 || groups[0].Count != n || groups[0].Message != "boom <n>" || groups[0].Worker != "billing" {
		t.Errorf("Groups after the backfill = %+v, %v; want one group of %d", groups, err, n)
	}
}
