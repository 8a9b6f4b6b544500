package pgstore_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/pgstore"
)

// Several instances starting at once on an empty schema: each migration is
// applied exactly once and every instance works.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	schema := "redrive_test_" + broker.NewMessageID()[:12]
	t.Cleanup(func() { dropSchema(t, schema) })
	const n = 5
	ctx := context.Background()
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = pgstore.Open(ctx, databaseURL(), pgstore.Options{Schema: schema, MaxConns: 2, Logger: slog.New(slog.DiscardHandler)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: Open: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	rows, err := stores[0].Pool().Query(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Version int32
		Name    string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != pgstore.SchemaVersion() || got[0].Version != 1 || got[0].Name != "init" {
		t.Errorf("schema_migrations = %+v, want versions 1..%d once each", got, pgstore.SchemaVersion())
	}
	// Every instance sees the same tables.
	r, inserted, err := stores[1].Insert(ctx, dlq.Record{Broker: dlq.BrokerKafka, DLQ: "m.dlq", ID: "0-1"})
	if err != nil || !inserted {
		t.Fatalf("Insert = %v, %v", inserted, err)
	}
	if _, err := stores[4].Get(ctx, "m.dlq", r.ID); err != nil {
		t.Errorf("another instance does not see the record: %v", err)
	}
	// Opening again applies nothing and keeps the data.
	again := open(t, schema)
	if n, err := again.Count(ctx, dlq.Query{}); err != nil || n != 1 {
		t.Errorf("Count after reopening = %d, %v; want 1", n, err)
	}
}

// The schema has the indexes listings rely on.
func TestSchemaIndexes(t *testing.T) {
	s := newStore(t)
	rows, err := s.Pool().Query(context.Background(), `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	have := strings.Join(names, " ")
	for _, want := range []string{"dlq_entries_dlq_status_seq", "dlq_entries_dlq_received", "dlq_entries_identity_key", "dlq_entries_replaying", "audit_log_entry", "dlq_entries_archive_dlq_seq"} {
		if !strings.Contains(have, want) {
			t.Errorf("index %s missing (have %s)", want, have)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name, url, schema string
		want              []string
		hide              string
	}{
		{"unreachable", "postgres://bob:s3cret@127.0.0.1:1/db?sslmode=disable", "", []string{"pgstore: connect to", "127.0.0.1:1", "bob"}, "s3cret"},
		{"bad url", "postgres://bob:s3cret@127.0.0.1:5432/db?sslmode=bogus", "", []string{"pgstore: database url"}, "s3cret"},
		{"bad schema", databaseURL(), "Robert'); DROP TABLE x;--", []string{"schema"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgstore.Open(ctx, tt.url, pgstore.Options{Schema: tt.schema})
			if err == nil {
				t.Fatal("Open succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tt.hide != "" && strings.Contains(err.Error(), tt.hide) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestMaskURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://bob:s3cret@db:5432/x?sslmode=disable", "postgres://bob:***@db:5432/x?sslmode=disable"},
		{"postgres://bob@db/x", "postgres://bob@db/x"},
		{"postgres://db/x?password=s3cret", "postgres://db/x?password=***"},
		{"postgres://bob:12/s3cret@db/x", "postgres://***"},
		{"host=db user=bob password=s3cret dbname=x", "host=db user=bob password=*** dbname=x"},
		{"host=db password='a b' dbname=x", "host=db password=*** dbname=x"},
	}
	for _, tt := range tests {
		if got := pgstore.MaskURL(tt.in); got != tt.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
