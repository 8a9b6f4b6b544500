package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// version2Schema makes schema as pgstore version 2 left it, with n live
// entries of old.dlq (every fifth replayed, every seventh discarded) and
// 40 archived ones.
func version2Schema(t *testing.T, schema string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatalf("PostgreSQL is required: %v", err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{schema}.Sanitize()
	stmts := []string{`CREATE SCHEMA ` + ident, `SET search_path TO ` + ident}
	for _, f := range []string{"migrations/0001_init.sql", "migrations/0002_original_wire.sql"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	stmts = append(stmts,
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_migrations (version, name) VALUES (1, 'init'), (2, 'original_wire')`,
		fmt.Sprintf(`INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at, received_at,
			message_id, original_topic, original_value, original_headers, error_message, reason, worker, source)
		SELECT 'old.dlq', 'old' || i, 'old' || i, 'rabbitmq', CASE WHEN i %% 2 = 0 THEN 'critical' ELSE 'warning' END,
			CASE WHEN i %% 5 = 0 THEN 'replayed' WHEN i %% 7 = 0 THEN 'discarded' ELSE 'pending' END,
			now(), now() - interval '1 day' + i * interval '1 second',
			'm' || i, 'orders', '\x7b7d', '[["dGVuYW50","YWNtZQ=="]]', 'boom ' || i, 'permanent', 'billing', 'orders.billing'
		FROM generate_series(1, %d) i`, n),
		`INSERT INTO dlq_entries_archive (seq, dlq, id, identity, broker, severity, status, status_changed_at, received_at, archived_at, original_value)
		SELECT 100000 + i, 'old.dlq', 'arch' || i, 'arch' || i, 'rabbitmq', 'warning', 'replayed', now(), now() - interval '40 days', now(), 'x'
		FROM generate_series(1, 40) i`,
	)
	for _, sql := range stmts {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("version 2 schema: %v\n%s", err, sql)
		}
	}
}

// The counts migration is online: on a store with version 2 entries, the
// counts are right before, during and after the batched backfill, which
// resumes after a restart; writers (inserts, status changes of counted and
// uncounted old entries, archive moves) run during it. Afterwards the
// old entries list and replay.
func TestCountsBackfillOnline(t *testing.T) {
	ctx := context.Background()
	schema := testenv.Schema(t)
	const n = 2000
	version2Schema(t, schema, n)
	openManual := func() *pgstore.Store {
		s, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 6, BackfillBatch: 150, BackfillManual: true,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	s := openManual()
	summaryMatches := func(when string) {
		t.Helper()
		c := checkCountsSum(t, schema)
		sums, err := s.Summaries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sum := range sums {
			if sum.Pending != c[sum.DLQ+"/pending"] || sum.Replayed != c[sum.DLQ+"/replayed"] || sum.Discarded != c[sum.DLQ+"/discarded"] ||
				sum.Archived != c[sum.DLQ+"/archived"] || sum.Replaying != c[sum.DLQ+"/replaying"] {
				t.Errorf("%s: summary %+v, counted %v", when, sum, c)
			}
			if got, err := s.Count(ctx, dlq.Query{DLQ: sum.DLQ, Status: dlq.StatusPending}); err != nil || got != c[sum.DLQ+"/pending"] {
				t.Errorf("%s: Count(%s, pending) = %d, %v; counted %d", when, sum.DLQ, got, err, c[sum.DLQ+"/pending"])
			}
		}
	}
	summaryMatches("before the backfill")
	if done, err := s.Backfill(ctx, 3); err != nil || done {
		t.Fatalf("3 batches of 150: done %v, %v; want more left", done, err)
	}
	summaryMatches("after 3 batches")
	_ = s.Close()

	// Restarted: resumes, with writers meanwhile.
	s = openManual()
	defer s.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		if done, err := s.Backfill(ctx, 0); err != nil || !done {
			t.Errorf("Backfill: done %v, %v", done, err)
		}
	})
	wg.Go(func() {
		for i := 1; i <= n; i += 37 { // counted and uncounted old entries alike
			_, err := s.Transition(ctx, dlq.Transition{DLQ: "old.dlq", ID: fmt.Sprint("old", i), From: []dlq.Status{dlq.StatusPending},
				To: dlq.StatusDiscarded, Actor: "t"})
			if err != nil && !isNotPending(err) {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		if _, err := s.InsertBatch(ctx, batchOf("new.dlq", "n", 300)); err != nil {
			t.Error(err)
		}
		if _, err := s.Archive(ctx, "old.dlq", time.Now().Add(-24*time.Hour+10*time.Minute), 500); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	checkCounts(t, schema)
	summaryMatches("after the backfill")
	var upto, done int64
	if err := s.Pool().QueryRow(ctx, `SELECT upto, done FROM dlq_counts_backfill`).Scan(&upto, &done); err != nil || done != upto || upto < n {
		t.Errorf("backfill progress = %d of %d, %v", done, upto, err)
	}

	// The old entries list and replay.
	page, err := s.List(ctx, dlq.Query{DLQ: "old.dlq", Status: dlq.StatusPending, Limit: 5})
	if err != nil || len(page.Records) != 5 {
		t.Fatalf("List of old entries = %d, %v", len(page.Records), err)
	}
	rec := &recorder{}
	ops, err := operate.New(operate.Config{Store: s, Republisher: rec, Logger: slog.New(slog.DiscardHandler),
		Routes: []dlq.Route{{DLQ: "old.dlq", Topic: "orders", Worker: "billing", Target: "orders.billing", Sources: []string{"orders.billing"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Replay(ctx, "old.dlq", page.Records[0].ID, "t"); err != nil {
		t.Fatalf("Replay of an old entry: %v", err)
	}
	if len(rec.entries) != 1 || rec.entries[0].OriginalHeaders["tenant"] != "acme" {
		t.Errorf("republished %+v", rec.entries)
	}
	checkCounts(t, schema)
}

func isNotPending(err error) bool { return errors.Is(err, dlq.ErrNotPending) }

// checkCountsSum is checkCounts summed over severities, by "dlq/status".
func checkCountsSum(t *testing.T, schema string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatalf("PostgreSQL is required: %v", err)
	}
	defer conn.Close(ctx)
	s := pgx.Identifier{schema}.Sanitize()
	rows, err := conn.Query(ctx, `SELECT dlq || '/' || status, count(*) FROM `+s+`.dlq_entries GROUP BY 1
		UNION ALL SELECT dlq || '/archived', count(*) FROM `+s+`.dlq_entries_archive GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	var k string
	var c int64
	if _, err := pgx.ForEachRow(rows, []any{&k, &c}, func() error { out[k] = c; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
