package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// BenchmarkReplayPath is the store's part of one replay (operate.Ops.Replay):
// claim (pending to replaying, audited), read the whole entry, confirm
// (replaying to replayed, on the claimed version), on a DLQ of 50,000
// entries besides those replayed. One op is one entry; `go test -run NONE
// -bench ReplayPath -benchtime 5000x ./dlq/pgstore` runs it.
func BenchmarkReplayPath(b *testing.B) {
	for _, k := range []struct {
		name string
		id   func(prefix string, j int) string // "" lets the store make it
	}{
		{"rabbitmq", func(string, int) string { return "" }},
		{"kafka", func(prefix string, j int) string { // ids without time
			return offsetID(map[string]int32{"bg-": 0, "e-": 1}[prefix], int64(j))
		}},
	} {
		b.Run(k.name, func(b *testing.B) { benchmarkReplayPath(b, k.id) })
	}
}

func benchmarkReplayPath(b *testing.B, makeID func(prefix string, j int) string) {
	const background, batch = 50_000, 1000
	ctx := context.Background()
	s := newStore(b)
	insert := func(prefix string, n int) []string {
		var ids []string
		for i := 0; i < n; i += batch {
			rs := make([]dlq.Record, 0, batch)
			for j := i; j < min(i+batch, n); j++ {
				rs = append(rs, dlq.Record{Broker: "rabbitmq", DLQ: "bench.dlq", ID: makeID(prefix, j), Identity: fmt.Sprint(prefix, j),
					Entry: dlq.Entry{ErrorClass: "app.Error", ErrorMessage: "failed", Worker: "billing", OriginalValue: []byte(`{"n":1}`)}})
			}
			res, err := s.InsertBatch(ctx, rs)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range res {
				if r.Err != nil || !r.Inserted {
					b.Fatalf("insert: %v", r.Err)
				}
				ids = append(ids, r.Stored.ID)
			}
		}
		return ids
	}
	insert("bg-", background)
	ids := insert("e-", b.N)
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE dlq_entries`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		claimed, err := s.Transition(ctx, dlq.Transition{DLQ: "bench.dlq", ID: ids[i], From: []dlq.Status{dlq.StatusPending},
			To: dlq.StatusReplaying, Actor: "bench", Action: "replay"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, "bench.dlq", ids[i]); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Transition(ctx, dlq.Transition{DLQ: "bench.dlq", ID: ids[i], From: []dlq.Status{dlq.StatusReplaying},
			To: dlq.StatusReplayed, IfVersion: claimed.Version, Actor: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkTransitionAB compares, in one process and interleaved entry by
// entry (so that both see the same load), the statements of a replay
// (claim with its audit row, read by id, confirm) on the schema of
// version 5 (one table, `WHERE dlq = $1 AND id = $2`) and on the
// partitioned one (the same plus `AND part IN (0, $week)`), both planned
// for their values as the store does. It reports the rate of each:
// `go test -run NONE -bench TransitionAB -benchtime 3000x ./dlq/pgstore`.
func BenchmarkTransitionAB(b *testing.B) {
	const background, batch = 50_000, 1000
	ctx := context.Background()
	s := newStore(b) // partitioned (version 6 and later)
	flat := testenv.Schema(b)
	conn, err := pgx.Connect(ctx, testenv.PostgreSQL.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	applySchema5(b, ctx, conn, flat)
	cfg, err := pgxpool.ParseConfig(testenv.PostgreSQL.URL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = flat
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	cfg.MaxConns = 2
	old, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer old.Close()
	var ids []string
	for i := 0; i < background+b.N; i += batch {
		rs := make([]dlq.Record, 0, batch)
		for j := i; j < min(i+batch, background+b.N); j++ {
			rs = append(rs, dlq.Record{Broker: "rabbitmq", DLQ: "bench.dlq", Identity: fmt.Sprint("e-", j),
				Entry: dlq.Entry{ErrorClass: "app.Error", ErrorMessage: "failed", Worker: "billing", OriginalValue: []byte(`{"n":1}`)}})
		}
		res, err := s.InsertBatch(ctx, rs)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			ids = append(ids, r.Stored.ID)
		}
	}
	// The same entries, with the same ids, in the version 5 table.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+pgx.Identifier{flat}.Sanitize()+`.dlq_entries (`+flatCols+`) SELECT `+flatCols+` FROM dlq_entries ORDER BY seq`); err != nil {
		b.Fatal(err)
	}
	for _, p := range []*pgxpool.Pool{s.Pool(), old} {
		if _, err := p.Exec(ctx, `VACUUM ANALYZE dlq_entries`); err != nil {
			b.Fatal(err)
		}
	}
	ids = ids[background:]
	const claim = `WITH moved AS (
			UPDATE dlq_entries SET status = 'replaying', status_changed_at = now(), status_by = 'bench', version = version + 1
			WHERE dlq = $1 AND id = $2 AND status = 'pending' PARTS
			RETURNING seq, dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at, error_class, left(error_message, 4096)),
		audit AS (INSERT INTO audit_log (at, actor, action, dlq, entry_id, from_status, to_status) SELECT now(), 'bench', 'replay', dlq, id, 'pending', 'replaying' FROM moved)
		SELECT version FROM moved`
	const get = `SELECT seq, dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at, error_class, error_message,
		original_key, original_value, original_headers, original_wire FROM dlq_entries WHERE dlq = $1 AND id = $2 PARTS`
	const confirm = `UPDATE dlq_entries SET status = 'replayed', status_changed_at = now(), version = version + 1
		WHERE dlq = $1 AND id = $2 AND status = 'replaying' AND version = $3::bigint PARTS RETURNING seq`
	sides := []struct {
		name  string
		pool  *pgxpool.Pool
		parts bool
		took  time.Duration
	}{{"v5", old, false, 0}, {"v6", s.Pool(), true, 0}}
	b.ResetTimer()
	for i := range b.N {
		week := int32(time.Now().UnixMilli() / (7 * 24 * 3600 * 1000))
		for k := range sides {
			side := &sides[(i+k)%2] // alternate which goes first
			read, write := []any{"bench.dlq", ids[i]}, []any{"bench.dlq", ids[i], nil}
			readParts, writeParts := "", ""
			if side.parts {
				read, write = append(read, week), append(write, week)
				readParts, writeParts = "AND part = $3::integer", "AND part = $4::integer" // what the store tries first
			}
			start := time.Now()
			if err := side.pool.QueryRow(ctx, strings.ReplaceAll(claim, "PARTS", readParts), read...).Scan(&write[2]); err != nil {
				b.Fatalf("%s claim: %v", side.name, err)
			}
			rows, err := side.pool.Query(ctx, strings.ReplaceAll(get, "PARTS", readParts), read...)
			if err != nil {
				b.Fatalf("%s get: %v", side.name, err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if rows.Err() != nil || n != 1 {
				b.Fatalf("%s get: %d rows, %v", side.name, n, rows.Err())
			}
			var seq int64
			if err := side.pool.QueryRow(ctx, strings.ReplaceAll(confirm, "PARTS", writeParts), write...).Scan(&seq); err != nil {
				b.Fatalf("%s confirm: %v", side.name, err)
			}
			side.took += time.Since(start)
		}
	}
	for _, side := range sides {
		b.ReportMetric(float64(b.N)/side.took.Seconds(), side.name+"-entries/s")
	}
}

// flatCols are the columns copied from the partitioned table to the
// version 5 one.
const flatCols = `dlq, id, identity, broker, severity, status, status_changed_at, status_by, version, received_at,
	message_id, original_topic, original_partition, original_offset, original_key, original_value, original_headers, original_wire,
	error_class, error_message, stack_trace, reason, retry_count, worker, worker_instance, source, first_failure_at, last_failure_at, fingerprint`
