package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

// BenchmarkGroups groups a DLQ of 100,000 entries in 40 failure groups
// (issue 18: at most 200 ms). The entries are inserted once, before the
// timer; `go test -run NONE -bench Groups ./dlq/pgstore` runs it.
func BenchmarkGroups(b *testing.B) {
	const n, batch = 100_000, 1000
	ctx := context.Background()
	s := newStore(b)
	end := time.Now()
	steps := []string{"reserve", "charge", "settle", "notify", "archive"}
	for i := 0; i < n; i += batch {
		rs := make([]dlq.Record, 0, batch)
		for j := i; j < i+batch; j++ {
			rs = append(rs, dlq.Record{
				Broker: broker.RabbitMQ, DLQ: "bench.dlq", Identity: fmt.Sprint("e-", j),
				ReceivedAt: end.Add(-time.Duration(n-j) * 2 * time.Second),
				Entry: dlq.Entry{ErrorClass: fmt.Sprint("app.Error", j%8), ErrorMessage: fmt.Sprintf("%s failed for order %d", steps[j%len(steps)], j),
					Worker: "billing", OriginalValue: []byte(`{"n":1}`)},
			})
		}
		if _, err := s.InsertBatch(ctx, rs); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE dlq_entries`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		gs, err := s.Groups(ctx, dlq.GroupQuery{DLQ: "bench.dlq", Now: end})
		if err != nil || len(gs) != 40 {
			b.Fatalf("Groups = %d groups, %v", len(gs), err)
		}
	}
}
