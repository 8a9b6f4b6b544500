package pgstore_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// Several instances starting at once on an empty schema: each migration is
// applied exactly once and every instance works.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	schema := testenv.Schema(t)
	const n = 5
	ctx := context.Background()
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 2, Logger: slog.New(slog.DiscardHandler)})
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
	// Each embedded migration once, in order (a version may be missing
	// while branches that add migrations are merged).
	ok := len(got) > 0 && got[0].Version == 1 && got[0].Name == "init" && int(got[len(got)-1].Version) == pgstore.SchemaVersion()
	for i := 1; ok && i < len(got); i++ {
		ok = got[i].Version > got[i-1].Version
	}
	if !ok {
		t.Errorf("schema_migrations = %+v, want the versions 1 to %d once each", got, pgstore.SchemaVersion())
	}
	// Every instance sees the same tables.
	r, inserted, err := stores[1].Insert(ctx, dlq.Record{Broker: "kafka", DLQ: "m.dlq", ID: "0-1"})
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
	t.Parallel()
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
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name, url, schema string
		want              []string
		hide              string
	}{
		{"unreachable", "postgres://bob:s3cret@127.0.0.1:1/db?sslmode=disable", "", []string{"pgstore: connect to", "127.0.0.1:1", "bob"}, "s3cret"},
		{"bad url", "postgres://bob:s3cret@127.0.0.1:5432/db?sslmode=bogus", "", []string{"pgstore: database url"}, "s3cret"},
		{"bad schema", testenv.PostgreSQL.URL(), "Robert'); DROP TABLE x;--", []string{"Config.Schema"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgstore.Open(ctx, tt.url, pgstore.Config{Schema: tt.schema})
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
	t.Parallel()
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

// recorder is a Republisher that keeps what it is given.
type recorder struct {
	mu      sync.Mutex
	entries []dlq.Entry
	routes  []dlq.Route
}

func (r *recorder) Republish(_ context.Context, e dlq.Entry, to dlq.Route, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries, r.routes = append(r.entries, e), append(r.routes, to)
	return nil
}

// An entry written by the version 1 schema (before the wire form) reads
// back after the migration to the latest version, without a wire form, and
// replays with its string headers; the archive migrates too.
func TestVersion1EntryReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := testenv.Schema(t)
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	defer conn.Close(ctx)
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	ident := pgx.Identifier{schema}.Sanitize()
	for _, sql := range []string{
		`CREATE SCHEMA ` + ident,
		`SET search_path TO ` + ident,
		string(v1),
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_migrations (version, name) VALUES (1, 'init')`,
		// What pgstore version 1 wrote: headers as base64 [name, value]
		// pairs ("tenant": "acme", "n": "42").
		`INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at, received_at,
			message_id, original_topic, original_key, original_value, original_headers, error_class, error_message, reason, worker, source)
		VALUES ('orders.billing.dlq', 'old1', 'old1', 'rabbitmq', 'warning', 'pending', now(), now(),
			'm1', 'orders', 'k', '\x7b7d', '[["dGVuYW50","YWNtZQ=="],["bg==","NDI="]]', 'E', 'boom', 'permanent', 'billing', 'orders.billing')`,
		`INSERT INTO dlq_entries_archive (seq, dlq, id, identity, broker, severity, status, status_changed_at, received_at, archived_at, original_value)
		VALUES (1000, 'orders.billing.dlq', 'old2', 'old2', 'rabbitmq', 'warning', 'pending', now(), now(), now(), 'x')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("version 1 schema: %v\n%s", err, sql)
		}
	}

	s := open(t, schema)
	var version int
	if err := s.Pool().QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != pgstore.SchemaVersion() || version < 2 {
		t.Fatalf("schema version after Open = %d, %v; want %d", version, err, pgstore.SchemaVersion())
	}
	old, err := s.Get(ctx, "orders.billing.dlq", "old1")
	if err != nil {
		t.Fatal(err)
	}
	if old.Entry.OriginalWire != nil || old.Entry.OriginalHeaders["tenant"] != "acme" || old.Entry.OriginalHeaders["n"] != "42" ||
		string(old.Entry.OriginalValue) != "{}" || old.ValueSize != 2 {
		t.Errorf("version 1 entry reads back as %+v", old)
	}
	if a, err := s.Get(ctx, "orders.billing.dlq", "old2"); err != nil || a.Status != dlq.StatusArchived || a.Entry.OriginalWire != nil {
		t.Errorf("version 1 archived entry = %+v, %v", a, err)
	}

	rec := &recorder{}
	ops, err := operate.New(operate.Config{Store: s, Republisher: rec, Logger: slog.New(slog.DiscardHandler),
		Routes: []dlq.Route{{DLQ: "orders.billing.dlq", Topic: "orders", Worker: "billing", Target: "orders.billing", Sources: []string{"orders.billing"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Replay(ctx, "orders.billing.dlq", "old1", "t"); err != nil {
		t.Fatalf("Replay of a version 1 entry: %v", err)
	}
	if len(rec.entries) != 1 || rec.entries[0].OriginalHeaders["tenant"] != "acme" || rec.entries[0].OriginalWire != nil ||
		rec.routes[0].Target != "orders.billing" {
		t.Errorf("republished %+v to %+v", rec.entries, rec.routes)
	}
	// New entries keep their wire form next to the old ones.
	r, _, err := s.Insert(ctx, dlq.Record{Broker: "rabbitmq", DLQ: "orders.billing.dlq", Identity: "new",
		Entry: dlq.Entry{OriginalWire: []byte{1, 0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if back, err := s.Get(ctx, "orders.billing.dlq", r.ID); err != nil || string(back.Entry.OriginalWire) != "\x01\x00\x00" {
		t.Errorf("new entry's wire form = %q, %v", back.Entry.OriginalWire, err)
	}
}
