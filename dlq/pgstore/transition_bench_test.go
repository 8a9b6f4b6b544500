package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

// BenchmarkReplayPath is the store's part of one replay (dlq.Ops.Replay):
// claim (pending to replaying, audited), read the whole entry, confirm
// (replaying to replayed, on the claimed version), on a DLQ of 50,000
// entries besides those replayed. One op is one entry; `go test -run NONE
// -bench ReplayPath -benchtime 5000x ./dlq/pgstore` runs it.
func BenchmarkReplayPath(b *testing.B) {
	const background, batch = 50_000, 1000
	ctx := context.Background()
	s := newStore(b)
	insert := func(prefix string, n int) []string {
		var ids []string
		for i := 0; i < n; i += batch {
			rs := make([]dlq.Record, 0, batch)
			for j := i; j < min(i+batch, n); j++ {
				rs = append(rs, dlq.Record{Broker: broker.RabbitMQ, DLQ: "bench.dlq", Identity: fmt.Sprint(prefix, j),
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
