package pgstore_test

import (
	"context"
	"testing"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// A store of schema version 8 checked broker IN ('rabbitmq', 'kafka') on
// its live entries (inherited by their partitions) and, locally, on
// archived partitions; version 9 drops every such check, so that the
// dead letters of any backend are stored.
func TestMigrateAnyBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := testenv.Schema(t)
	s := open(t, schema)
	const checks = `SELECT count(*) FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
		WHERE k.contype = 'c' AND c.relnamespace = current_schema()::regnamespace
		  AND c.relname LIKE 'dlq\_entries%' AND pg_get_constraintdef(k.oid) LIKE '%broker%'`
	count := func() int {
		t.Helper()
		var n int
		if err := s.Pool().QueryRow(ctx, checks).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("a new store has %d broker checks, want none", n)
	}
	// Back to version 8, as such a store was: the check on the live
	// entries and, kept locally, on the archive's first partition.
	for _, sql := range []string{
		`ALTER TABLE dlq_entries ADD CONSTRAINT dlq_entries_broker_check CHECK (broker IN ('rabbitmq', 'kafka'))`,
		`ALTER TABLE dlq_entries_archive_p0 ADD CONSTRAINT dlq_entries_broker_check CHECK (broker IN ('rabbitmq', 'kafka'))`,
		`DELETE FROM schema_migrations WHERE version >= 9`,
	} {
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if n := count(); n < 3 { // the live entries, their partitions, the archive's
		t.Fatalf("version 8 has %d broker checks, want the live entries', their partitions' and the archive's", n)
	}
	if _, _, err := s.Insert(ctx, dlq.Record{Broker: "memory", DLQ: "any.dlq", Identity: "m-1"}); err == nil {
		t.Fatal("version 8 stored a record of backend memory: the test no longer sees the check")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, schema)
	if n := count(); n != 0 {
		t.Errorf("after migrating to version 9: %d broker checks left", n)
	}
	for i, name := range []string{"memory", "rabbitmq", "kafka"} {
		r, inserted, err := s.Insert(ctx, dlq.Record{Broker: name, DLQ: "any.dlq", Identity: name + "-" + string(rune('a'+i))})
		if err != nil || !inserted || r.Broker != name {
			t.Errorf("Insert of a %s record after the migration = %+v, %v, %v", name, r.Broker, inserted, err)
		}
	}
}
