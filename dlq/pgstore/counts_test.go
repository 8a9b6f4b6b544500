package pgstore_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// checkCounts fails unless dlq_counts of schema equals count(*) of the
// entries by DLQ × status × severity (archived ones as "archived"), and
// returns the counts.
func checkCounts(t *testing.T, schema string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatalf("PostgreSQL is required: %v", err)
	}
	defer conn.Close(ctx)
	read := func(sql string) map[string]int64 {
		rows, err := conn.Query(ctx, strings.ReplaceAll(sql, "S.", pgx.Identifier{schema}.Sanitize()+"."))
		if err != nil {
			t.Fatalf("read counts: %v", err)
		}
		out := map[string]int64{}
		var d, st, sev string
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&d, &st, &sev, &n}, func() error {
			if n != 0 {
				out[d+"/"+st+"/"+sev] = n
			}
			return nil
		}); err != nil {
			t.Fatalf("read counts: %v", err)
		}
		return out
	}
	summary := read(`SELECT dlq, status, severity, n FROM S.dlq_counts`)
	counted := read(`SELECT dlq, status, severity, count(*) FROM S.dlq_entries GROUP BY 1, 2, 3
		UNION ALL SELECT dlq, 'archived', severity, count(*) FROM S.dlq_entries_archive GROUP BY 1, 3`)
	if !maps.Equal(summary, counted) {
		t.Fatalf("dlq_counts = %v\ncount(*)   = %v", summary, counted)
	}
	return summary
}

func newSchemaStore(t *testing.T) (*pgstore.Store, string) {
	t.Helper()
	schema := "redrive_test_" + broker.NewMessageID()[:12]
	s := open(t, schema)
	t.Cleanup(func() { testenv.DropSchema(t, schema) })
	return s, schema
}

// batchOf returns n RabbitMQ records of dlqName, identities prefix-0…,
// severities taking turns.
func batchOf(dlqName, prefix string, n int) []dlq.Record {
	sevs := []broker.Severity{broker.SeverityCritical, broker.SeverityWarning, broker.SeverityInfo}
	out := make([]dlq.Record, n)
	for i := range out {
		out[i] = dlq.Record{Broker: "rabbitmq", DLQ: dlqName, Identity: fmt.Sprintf("%s-%d", prefix, i), Severity: string(sevs[i%3]),
			ReceivedAt: time.Now().Add(-time.Duration(n-i) * time.Minute),
			Entry:      dlq.Entry{OriginalValue: []byte("v"), OriginalPartition: -1, OriginalOffset: -1, ErrorMessage: fmt.Sprint("e", i)}}
	}
	return out
}

// The summary table equals count(*) after batch inserts with duplicates,
// status changes (both transition paths), archive moves and concurrent
// writers, and Count and Summaries read it.
func TestCountsFollowEveryChange(t *testing.T) {
	s, schema := newSchemaStore(t)
	ctx := t.Context()
	res, err := s.InsertBatch(ctx, append(batchOf("c1.dlq", "a", 30), batchOf("c2.dlq", "b", 12)...))
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, schema)
	// Redelivered: nothing changes.
	if again, err := s.InsertBatch(ctx, batchOf("c1.dlq", "a", 30)); err != nil || slices.ContainsFunc(again, func(r dlq.InsertResult) bool { return r.Inserted || r.Err != nil }) {
		t.Fatalf("redelivered batch: %v", err)
	}
	c := checkCounts(t, schema)
	if c["c1.dlq/pending/critical"] != 10 || c["c2.dlq/pending/info"] != 4 {
		t.Fatalf("counts = %v", c)
	}
	for i, r := range res[:10] {
		from := []dlq.Status{dlq.StatusPending}
		if i%2 == 1 {
			from = append(from, dlq.StatusReplaying) // the transaction path
		}
		if _, err := s.Transition(ctx, dlq.Transition{DLQ: r.Stored.DLQ, ID: r.Stored.ID, From: from, To: dlq.StatusDiscarded, Actor: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	checkCounts(t, schema)
	if n, err := s.Archive(ctx, "c1.dlq", time.Now().Add(-15*time.Minute-30*time.Second), 1000); err != nil || n != 15 {
		t.Fatalf("Archive = %d, %v; want 15", n, err)
	}
	if c = checkCounts(t, schema); c["c1.dlq/archived/critical"]+c["c1.dlq/archived/warning"]+c["c1.dlq/archived/info"] != 15 {
		t.Fatalf("archived counts = %v, want 15 in all", c)
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			b := batchOf("c3.dlq", "w", 40)
			slices.Reverse(b[:w*10])
			if _, err := s.InsertBatch(ctx, b); err != nil {
				t.Error(err)
			}
			if _, err := s.InsertBatch(ctx, batchOf("c3.dlq", fmt.Sprint("own", w), 10)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c = checkCounts(t, schema)

	sums, err := s.Summaries(ctx)
	if err != nil || len(sums) != 3 {
		t.Fatalf("Summaries = %+v, %v", sums, err)
	}
	for _, sum := range sums {
		var live, archived int64
		for k, n := range c {
			if strings.HasPrefix(k, sum.DLQ+"/") {
				if strings.Contains(k, "/archived/") {
					archived += n
				} else {
					live += n
				}
			}
		}
		if got := sum.Pending + sum.Replaying + sum.Replayed + sum.Discarded; got != live || sum.Archived != archived {
			t.Errorf("summary of %s: %d live, %d archived; counted %d, %d", sum.DLQ, got, sum.Archived, live, archived)
		}
		n, err := s.Count(ctx, dlq.Query{DLQ: sum.DLQ, Status: dlq.StatusPending})
		if err != nil || n != sum.Pending {
			t.Errorf("Count(%s, pending) = %d, %v; want %d", sum.DLQ, n, err, sum.Pending)
		}
	}
	if sums[2].Pending != 80 {
		t.Errorf("c3.dlq pending = %d, want 80 (40 shared + 4 × 10 own)", sums[2].Pending)
	}
}

// A record the database refuses does not fail its batch: the others are
// stored, it reports the database's error.
func TestInsertBatchRefusedRow(t *testing.T) {
	s, schema := newSchemaStore(t)
	ctx := t.Context()
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE `+pgx.Identifier{schema, "dlq_entries"}.Sanitize()+
		` ADD CONSTRAINT test_poison CHECK (error_message <> 'poison')`); err != nil {
		t.Fatal(err)
	}
	b := batchOf("poison.dlq", "p", 9)
	b[5].Entry.ErrorMessage = "poison"
	res, err := s.InsertBatch(ctx, b)
	if err != nil {
		t.Fatalf("InsertBatch: %v", err)
	}
	var stored int
	for i, r := range res {
		switch {
		case i == 5:
			if r.Err == nil || !strings.Contains(r.Err.Error(), "test_poison") {
				t.Errorf("poisoned record: %v, want the check's error", r.Err)
			}
		case r.Err != nil || !r.Inserted:
			t.Errorf("record %d: %v, inserted %v", i, r.Err, r.Inserted)
		default:
			stored++
		}
	}
	if n, err := s.Count(ctx, dlq.Query{DLQ: "poison.dlq"}); err != nil || n != 8 || stored != 8 {
		t.Errorf("stored %d, Count = %d, %v; want 8 of 9", stored, n, err)
	}
	checkCounts(t, schema)
}
