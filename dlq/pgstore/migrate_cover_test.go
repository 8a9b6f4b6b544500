package pgstore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
)

// undo8 takes a store of version 8 back to version 7: the index of
// (dlq, received_at) without the covered columns.
var undo8 = []string{
	`DROP INDEX dlq_entries_dlq_received_cover`,
	`CREATE INDEX dlq_entries_dlq_received ON dlq_entries (dlq, received_at)`,
	`DELETE FROM schema_migrations WHERE version >= 8`,
}

// Migration 8 builds the covering (dlq, received_at) index of every
// partition, CONCURRENTLY before its transaction for a large partition
// (every partition here, forced) or in it, builds again one left invalid
// by an interrupted build, attaches them to dlq_entries' and drops the
// index it replaces; the entries of every partition list by time window
// as before.
func TestMigrateVersion8(t *testing.T) {
	for _, c := range []struct {
		name  string
		above int64
	}{{"in the transaction", 1 << 40}, {"concurrently", -1}} {
		t.Run(c.name, func(t *testing.T) {
			defer pgstore.SetConcurrentlyAbove(c.above)()
			testMigrateVersion8(t)
		})
	}
}

func testMigrateVersion8(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	s, schema, _ := openClocked(t, start)
	const d = "orders.dlq"
	var want []string
	for i := range 20 {
		at := start.Add(-time.Duration(i) * 24 * time.Hour) // this week's partition, earlier ones (0)
		r := dlq.Record{Broker: "rabbitmq", DLQ: d, Identity: fmt.Sprint("e", i), ReceivedAt: at}
		if i%2 == 1 {
			r.ID = offsetID(0, int64(i))
		}
		stored, inserted, err := s.Insert(ctx, r)
		if err != nil || !inserted {
			t.Fatalf("insert %d: %v", i, err)
		}
		if i < 10 {
			want = append([]string{stored.ID}, want...) // newest (highest seq) first
		}
	}
	// Back to version 7, with the index of one partition left invalid
	// as by an interrupted CREATE INDEX CONCURRENTLY.
	for _, sql := range append(undo8,
		`CREATE INDEX dlq_entries_p0_received_cover ON dlq_entries_p0 (dlq, received_at) INCLUDE (seq, status, fingerprint, part)`,
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'dlq_entries_p0_received_cover'::regclass`) {
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, schema)
	rows, err := s.Pool().Query(ctx, `SELECT c.relname, coalesce(x.indisvalid, false), coalesce(i2.inhparent = 'dlq_entries_dlq_received_cover'::regclass, false)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		LEFT JOIN pg_class ic ON ic.relname = c.relname || '_received_cover' AND ic.relnamespace = c.relnamespace
		LEFT JOIN pg_index x ON x.indexrelid = ic.oid
		LEFT JOIN pg_inherits i2 ON i2.inhrelid = ic.oid
		WHERE i.inhparent = 'dlq_entries'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	partitions := 0
	for rows.Next() {
		var name string
		var valid, attached bool
		if err := rows.Scan(&name, &valid, &attached); err != nil {
			t.Fatal(err)
		}
		partitions++
		if !valid || !attached {
			t.Errorf("partition %s: covering index valid %v, attached %v; want both", name, valid, attached)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if partitions < 2 {
		t.Errorf("%d partitions, want 0 and this week's at least", partitions)
	}
	var old bool
	if err := s.Pool().QueryRow(ctx, `SELECT to_regclass('dlq_entries_dlq_received') IS NOT NULL`).Scan(&old); err != nil || old {
		t.Errorf("the index dlq_entries_dlq_received is still there (%v)", err)
	}

	// The last ten days, pending, newest first, in pages of 3.
	var got []string
	q := dlq.Query{DLQ: d, Status: dlq.StatusPending, Since: start.Add(-9*24*time.Hour - time.Minute), Until: start.Add(time.Minute), Limit: 3, NewestFirst: true}
	for {
		page, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			got = append(got, r.ID)
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// offsetID is the id a backend with offsets gives a dead letter (Kafka's
// "{partition}-{offset}", kafka.RecordID): the tests' example of a
// DeadLetter.ID.
func offsetID(partition int32, offset int64) string {
	return strconv.FormatInt(int64(partition), 10) + "-" + strconv.FormatInt(offset, 10)
}
