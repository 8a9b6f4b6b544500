package bench_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/internal/tools/bench"
)

// benchSchemas counts the schemas RunStore makes.
func benchSchemas(t *testing.T) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatalf("PostgreSQL is required (DATABASE_URL, default %s): %v", bench.DefaultDatabaseURL, err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'redrive\_bench\_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunStore runs the store scenario at a small size: every read's
// result is checked by RunStore itself (a wrong one fails it), every entry
// is stored, the report has each read, and the schemas are gone after.
func TestRunStore(t *testing.T) {
	before := benchSchemas(t)
	rep, err := bench.RunStore(t.Context(), bench.StoreConfig{DatabaseURL: testenv.PostgreSQL.URL(), Entries: 3000, Batch: 250, Samples: 5,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("RunStore: %v", err)
	}
	if rep.Entries != 3000 || rep.CopyEntries != 3000 || rep.InsertRate <= 0 || rep.CopyRate <= 0 || rep.TableBytes <= 0 || rep.IndexBytes <= 0 {
		t.Errorf("report = %+v", rep)
	}
	if avg := rep.PayloadBytes / int64(rep.Entries); avg < 700 || avg > 1400 {
		t.Errorf("payloads average %d bytes, want about 1 KiB", avg)
	}
	if len(rep.Reads) != 14 {
		t.Errorf("%d reads timed, want 14", len(rep.Reads))
	}
	if rep.RSSBefore <= 0 || rep.RSSReads <= 0 {
		t.Errorf("resident memory not measured: %d before, %d during the reads", rep.RSSBefore, rep.RSSReads)
	}
	for _, rd := range rep.Reads {
		if rd.Samples == 0 || rd.P50 <= 0 || rd.P99 < rd.P50 {
			t.Errorf("read %+v", rd)
		}
	}
	var out bytes.Buffer
	if err := rep.Markdown(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| 3000 |") || !strings.Contains(out.String(), "entry by id") ||
		!strings.Contains(out.String(), "failure groups") || !strings.Contains(out.String(), "by failure group") ||
		!strings.Contains(out.String(), "arrivals chart") || !strings.Contains(out.String(), "Resident memory") {
		t.Errorf("markdown:\n%s", out.String())
	}
	if after := benchSchemas(t); after != before {
		t.Errorf("%d bench schemas after the run, %d before: not dropped", after, before)
	}
}

// TestRunStoreKeepReuse fills a kept schema, times the reads again on it
// with Reuse (same entries, same checks), and leaves exactly it behind.
func TestRunStoreKeepReuse(t *testing.T) {
	before := benchSchemas(t)
	cfg := bench.StoreConfig{DatabaseURL: testenv.PostgreSQL.URL(), Entries: 2000, Batch: 500, Samples: 3, Keep: true}
	rep, err := bench.RunStore(t.Context(), cfg)
	if err != nil {
		t.Fatalf("RunStore(Keep): %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), testenv.PostgreSQL.URL())
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{rep.Schema}.Sanitize()+` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	if after := benchSchemas(t); after != before+1 || !rep.Kept || rep.Schema == "" {
		t.Fatalf("%d bench schemas after a kept run, %d before; report schema %q kept %v", after, before, rep.Schema, rep.Kept)
	}
	// Every entry is in its week's partition, made as the arrivals went
	// by: RabbitMQ's (48 %) by their store-made ids, Kafka's (ids without
	// time) by their arrival, their part recorded in dlq_id_parts.
	conn, err := pgx.Connect(t.Context(), cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	var weeks, inWeeks, kafka, recorded int
	err = conn.QueryRow(t.Context(), `SELECT count(DISTINCT part) FILTER (WHERE part > 0), count(*) FILTER (WHERE part > 0),
			count(*) FILTER (WHERE broker = 'kafka'), (SELECT count(*) FROM `+pgx.Identifier{rep.Schema, "dlq_id_parts"}.Sanitize()+` WHERE part > 0)
		FROM `+pgx.Identifier{rep.Schema, "dlq_entries"}.Sanitize()).Scan(&weeks, &inWeeks, &kafka, &recorded)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if weeks < 4 || inWeeks < cfg.Entries-10 || kafka < 800 || recorded != kafka {
		t.Errorf("%d entries in %d week partitions, %d of Kafka with %d recorded parts; want nearly all %d in 5, the parts of all Kafka's",
			inWeeks, weeks, kafka, recorded, cfg.Entries)
	}
	again, err := bench.RunStore(t.Context(), bench.StoreConfig{DatabaseURL: cfg.DatabaseURL, Samples: 3, Reuse: rep.Schema})
	if err != nil {
		t.Fatalf("RunStore(Reuse %s): %v", rep.Schema, err)
	}
	if again.Entries != 2000 || again.InsertRate != 0 || len(again.Reads) != len(rep.Reads) || again.TableBytes <= 0 {
		t.Errorf("reused report = %+v", again)
	}
	var out bytes.Buffer
	if err := again.Markdown(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| 2000 |") || !strings.Contains(out.String(), "--reuse "+rep.Schema) || strings.Contains(out.String(), "raw COPY") {
		t.Errorf("markdown of the reused run:\n%s", out.String())
	}
	if after := benchSchemas(t); after != before+1 {
		t.Errorf("%d bench schemas after the reused run, want %d", after, before+1)
	}
}

func TestStoreConfigValidate(t *testing.T) {
	for _, c := range []bench.StoreConfig{{Entries: 10}, {Entries: 5000, Batch: -1}, {Entries: 5000, Samples: -2}, {Reuse: "public"}} {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", c)
		}
	}
}
