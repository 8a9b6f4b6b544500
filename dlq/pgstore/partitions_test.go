package pgstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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

// week is the partition of an id made at t.
func week(t time.Time) int64 { return t.UnixMilli() / (7 * 24 * 3600 * 1000) }

// partitionOf returns the table that holds entry id of d.
func partitionOf(t *testing.T, s *pgstore.Store, d, id string) string {
	t.Helper()
	var table string
	err := s.Pool().QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM dlq_entries WHERE dlq = $1 AND id = $2
		UNION ALL SELECT tableoid::regclass::text FROM dlq_entries_archive WHERE dlq = $1 AND id = $2`, d, id).Scan(&table)
	if err != nil {
		t.Fatalf("partition of %s/%s: %v", d, id, err)
	}
	return table
}

// Open creates the partitions of the current week and those ahead; an
// entry goes to its id's week partition (an id without time: its received
// week's) when it exists, else to partition 0 (never an error), and reads, transitions and de-duplicates the same
// way wherever it is.
func TestInsertPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	for w := week(now); w <= week(now)+pgstore.PartitionsAhead; w++ {
		var ok bool
		if err := s.Pool().QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, fmt.Sprint("dlq_entries_w", w)).Scan(&ok); err != nil || !ok {
			t.Errorf("partition of week %d: exists = %v, %v", w, ok, err)
		}
	}
	old := now.Add(-10 * 7 * 24 * time.Hour)
	tests := []struct {
		name, id, want string
	}{
		{"current week", dlq.NewID(now), fmt.Sprint("dlq_entries_w", week(now))},
		{"week without a partition", dlq.NewID(old), "dlq_entries_p0"},
		// An id without time: the week it was received in (now).
		{"id of another shape", "order-17", fmt.Sprint("dlq_entries_w", week(now))},
		{"lookalike of another time", strings.Repeat("z", 26), fmt.Sprint("dlq_entries_w", week(now))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := "p." + strings.ReplaceAll(tt.name, " ", "-") + ".dlq"
			r, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, ID: tt.id, Identity: "x"})
			if err != nil || !inserted {
				t.Fatalf("Insert = %v, %v", inserted, err)
			}
			if got := partitionOf(t, s, d, tt.id); got != tt.want {
				t.Errorf("entry is in %s, want %s", got, tt.want)
			}
			// The same identity again, with an id of another partition:
			// a duplicate of the first.
			for _, other := range []string{dlq.NewID(now), dlq.NewID(old), "other-1"} {
				again, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, ID: other, Identity: "x"})
				if err != nil || inserted || again.ID != r.ID {
					t.Errorf("Insert of the same identity as %s = %s, %v, %v; want the first (%s), not inserted", other, again.ID, inserted, err, r.ID)
				}
			}
			// Its id with another identity: a conflict, and the identity
			// stays free.
			if _, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, ID: tt.id, Identity: "y"}); err == nil {
				t.Errorf("Insert of id %s with another identity succeeded", tt.id)
			}
			if _, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, Identity: "y"}); err != nil || !inserted {
				t.Errorf("Insert of the identity that conflicted = %v, %v; want inserted", inserted, err)
			}
			got, err := s.Get(ctx, d, tt.id)
			if err != nil || got.Identity != "x" {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			moved, err := s.Transition(ctx, dlq.Transition{DLQ: d, ID: tt.id, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "t", Action: "discard"})
			if err != nil || moved.Status != dlq.StatusDiscarded {
				t.Errorf("Transition = %+v, %v", moved, err)
			}
			if many, err := s.GetMany(ctx, d, []string{tt.id}); err != nil || len(many) != 1 || many[0].Status != dlq.StatusDiscarded {
				t.Errorf("GetMany = %+v, %v", many, err)
			}
		})
	}
}

// A batch (the COPY path) with identities repeated within it and across
// partitions stores each identity once; an id taken by another identity
// leaves that identity free.
func TestInsertBatchPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	old := now.Add(-20 * 7 * 24 * time.Hour)
	first := []dlq.Record{
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(now), Identity: "a"},
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(old), Identity: "b"},
	}
	for i := range first {
		if _, _, err := s.Insert(ctx, first[i]); err != nil {
			t.Fatal(err)
		}
	}
	batch := []dlq.Record{
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(old), Identity: "a"},  // duplicate across partitions
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(now), Identity: "b"},  // duplicate across partitions
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(now), Identity: "c"},  // new
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(old), Identity: "c"},  // duplicate within the batch
		{Broker: "kafka", DLQ: "b.dlq", ID: first[0].ID, Identity: "d"},     // id conflict
		{Broker: "kafka", DLQ: "b.dlq", ID: dlq.NewID(now), Identity: "e"},  // new
		{Broker: "kafka", DLQ: "b.dlq", ID: "same-id", Identity: "f"},       // new
		{Broker: "kafka", DLQ: "b.dlq", ID: "same-id", Identity: "g"},       // id conflict within the batch
		{Broker: "kafka", DLQ: "other.dlq", ID: first[0].ID, Identity: "a"}, // another DLQ
	}
	res, err := s.InsertBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dup", "dup", "new", "dup", "conflict", "new", "new", "conflict", "new"}
	for i, r := range res {
		got := "new"
		switch {
		case r.Err != nil:
			got = "conflict"
		case !r.Inserted:
			got = "dup"
		}
		if got != want[i] {
			t.Errorf("record %d (%s): %s (%v), want %s", i, batch[i].Identity, got, r.Err, want[i])
		}
	}
	if res[3].Stored.ID != res[2].Stored.ID {
		t.Errorf("duplicate within the batch reads as %s, want %s", res[3].Stored.ID, res[2].Stored.ID)
	}
	// The identities that conflicted on their id are free.
	for _, identity := range []string{"d", "g"} {
		if _, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: "b.dlq", Identity: identity}); err != nil || !inserted {
			t.Errorf("identity %s after its id conflict: inserted %v, %v", identity, inserted, err)
		}
	}
	if n, err := s.Count(ctx, dlq.Query{DLQ: "b.dlq"}); err != nil || n != 7 {
		t.Errorf("Count = %d, %v; want 7", n, err)
	}
}

// scanned returns the partitions of dlq_entries that plan reads (a
// ModifyTable lists all of them, the pruned ones too).
func scanned(plan string) []string {
	return regexp.MustCompile(`Scan (?:using \S+ )?on dlq_entries(?:_archive)?_(?:p0|w\d+)`).FindAllString(plan, -1)
}

// A lookup by id and a transition read partition 0 and the id's week
// only (or the id's week alone, the store's first try), planned for their
// values (what the store does) or generic.
func TestPartitionPruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	now := time.Now()
	// Entries in every partition.
	for w := range pgstore.PartitionsAhead + 1 {
		at := now.Add(time.Duration(w) * 7 * 24 * time.Hour)
		for _, id := range []string{dlq.NewID(at), fmt.Sprint("legacy-", w)} {
			if _, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: "x.dlq", ID: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := dlq.NewID(now)
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	queries := map[string]string{
		"get":             `SELECT id, status FROM dlq_entries WHERE dlq = $1 AND id = $2 AND part IN (0, $3::integer)`,
		"get in its week": `SELECT id, status FROM dlq_entries WHERE dlq = $1 AND id = $2 AND part = $3::integer`,
		"transition in its week": `WITH moved AS (UPDATE dlq_entries SET status = 'replaying', version = version + 1
			WHERE dlq = $1 AND id = $2 AND part = $3::integer AND status = 'pending' RETURNING id)
			INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status)
			SELECT now(), 't', 'replay', $1, id, 'pending', 'replaying' FROM moved`,
		"get archived": `SELECT id, status FROM dlq_entries_archive WHERE dlq = $1 AND id = $2 AND part IN (0, $3::integer)`,
		"transition": `WITH moved AS (UPDATE dlq_entries SET status = 'replaying', version = version + 1
			WHERE dlq = $1 AND id = $2 AND part IN (0, $3::integer) AND status = 'pending' RETURNING id)
			INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status)
			SELECT now(), 't', 'replay', $1, id, 'pending', 'replaying' FROM moved`,
	}
	for name, q := range queries {
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
				t.Fatal(err)
			}
			stmt := strings.ReplaceAll(name, " ", "_") + "_" + mode
			if _, err := conn.Exec(ctx, `PREPARE `+stmt+` AS `+q); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+stmt+`('x.dlq', '`+id+`', `+fmt.Sprint(week(now))+`)`, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(lines, "\n")
			want := 2 // partition 0 and the id's week
			switch {
			case name == "get archived":
				want = 1 // the archive has partition 0 only
			case strings.HasSuffix(name, "in its week"):
				want = 1
			}
			if got := scanned(plan); len(got) != want {
				t.Errorf("%s (%s) reads %v:\n%s", name, mode, got, plan)
			}
			t.Logf("%s, %s:\n%s", name, mode, plan)
		}
	}
	if _, err := conn.Exec(ctx, `RESET plan_cache_mode`); err != nil {
		t.Fatal(err)
	}
}

// applySchema5 creates, in schema, the tables of schema version 5 (what a
// store of that version made), from the migration files.
func applySchema5(t testing.TB, ctx context.Context, conn *pgx.Conn, schema string) {
	t.Helper()
	ident := pgx.Identifier{schema}.Sanitize()
	sqls := []string{`CREATE SCHEMA ` + ident, `SET search_path TO ` + ident,
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	for v := 1; v <= 5; v++ {
		files, err := filepath.Glob(fmt.Sprintf("migrations/%04d_*.sql", v))
		if err != nil || len(files) != 1 {
			t.Fatalf("migration %d: %v %v", v, files, err)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		sqls = append(sqls, string(b), fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, 'v%d')`, v, v))
	}
	for _, sql := range sqls {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("schema version 5: %v\n%s", err, sql)
		}
	}
}

// schema5Insert is how a store of schema version 5 inserted an entry (the
// columns it wrote; ON CONFLICT DO NOTHING on its unique keys).
const schema5Insert = `INSERT INTO dlq_entries (dlq, id, identity, broker, severity, status, status_changed_at, received_at,
	error_class, error_message, worker, original_value, fingerprint)
	VALUES ($1, $2, $3, 'kafka', 'warning', 'pending', now(), $4, 'E', 'boom', 'billing', '{"v":5}', '') ON CONFLICT DO NOTHING`

// The migration to version 6 of a store holding entries of version 5,
// while a store of version 5 keeps inserting: nothing is lost, and the old
// entries list, count, read by id, replay and archive afterwards.
func TestMigrateVersion5Online(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := testenv.Schema(t)
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	defer conn.Close(ctx)
	applySchema5(t, ctx, conn, schema)
	const d = "orders.billing.dlq"
	past := time.Now().Add(-48 * time.Hour)
	var ids []string
	for i := range 2000 {
		id := dlq.NewID(past)
		if i%2 == 1 {
			id = fmt.Sprint("v5-", i) // ids of another shape
		}
		if _, err := conn.Exec(ctx, schema5Insert, d, id, fmt.Sprint("old-", i), past); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}

	// A version 5 writer goes on during the migration, on its own
	// connection (its statements prepared before).
	writer, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(ctx)
	if _, err := writer.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written []string
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := dlq.NewID(time.Now())
			if _, err := writer.Exec(ctx, schema5Insert, d, id, fmt.Sprint("during-", i), time.Now()); err != nil {
				writeErr = err
				return
			}
			written = append(written, id)
		}
	}()
	// (The fingerprint backfill, which would lock some of the entries
	// Archive moves, is left out.)
	s, err := pgstore.Open(ctx, testenv.PostgreSQL.URL(), pgstore.Config{Schema: schema, MaxConns: 4, Logger: slog.New(slog.DiscardHandler), BackfillManual: true})
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// The writer inserts a few more after the migration.
	var after int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM dlq_entries`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	for {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM dlq_entries`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= after+10 || writeErr != nil {
			break
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("the version 5 writer failed: %v", writeErr)
	}
	ids = append(ids, written...)
	t.Logf("%d entries written by version 5 during and after the migration", len(written))

	var version int
	if err := s.Pool().QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != pgstore.SchemaVersion() {
		t.Fatalf("schema version = %d, %v", version, err)
	}
	var parts []string
	rows, err := s.Pool().Query(ctx, `SELECT DISTINCT tableoid::regclass::text FROM dlq_entries`)
	if err == nil {
		parts, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(parts) != 1 || parts[0] != "dlq_entries_p0" {
		t.Errorf("the version 5 entries are in %v, %v; want dlq_entries_p0 only", parts, err)
	}
	if n, err := s.Count(ctx, dlq.Query{DLQ: d}); err != nil || n != int64(len(ids)) {
		t.Errorf("Count = %d, %v; want %d", n, err, len(ids))
	}
	listed := 0
	for q := (dlq.Query{DLQ: d, Limit: dlq.MaxLimit}); ; {
		page, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page.Records)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if listed != len(ids) {
		t.Errorf("listed %d entries, want %d", listed, len(ids))
	}
	for _, id := range []string{ids[0], ids[1], ids[len(ids)-1]} {
		r, err := s.Get(ctx, d, id)
		if err != nil || string(r.Entry.OriginalValue) != `{"v":5}` {
			t.Errorf("Get(%s) = %+v, %v", id, r, err)
		}
	}
	// An old identity is still a duplicate.
	if r, inserted, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, Identity: "old-7"}); err != nil || inserted || r.ID != ids[7] {
		t.Errorf("Insert of an old identity = %s, %v, %v; want %s, not inserted", r.ID, inserted, err, ids[7])
	}
	rec := &recorder{}
	ops, err := operate.New(operate.Config{Store: s, Republisher: rec, Logger: slog.New(slog.DiscardHandler),
		Routes: []dlq.Route{{DLQ: d, Topic: "orders", Worker: "billing", Target: "orders.billing", Sources: []string{"orders.billing"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ids[0], ids[1], ids[len(ids)-1]} {
		if r, err := ops.Replay(ctx, d, id, "t"); err != nil || r.Status != dlq.StatusReplayed {
			t.Errorf("Replay(%s) = %+v, %v", id, r, err)
		}
	}
	// New entries go to their week; the old ones archive.
	r, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: d, Identity: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := partitionOf(t, s, d, r.ID), fmt.Sprint("dlq_entries_w", week(time.Now())); got != want {
		t.Errorf("new entry in %s, want %s", got, want)
	}
	n, err := s.Archive(ctx, d, past.Add(time.Hour), 10_000)
	if err != nil || n != 2000 {
		t.Errorf("Archive = %d, %v; want the 2000 old entries", n, err)
	}
	if a, err := s.Get(ctx, d, ids[2]); err != nil || a.Status != dlq.StatusArchived {
		t.Errorf("archived old entry = %+v, %v", a, err)
	}
	checkCounts(t, schema)
}
