package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
				Broker: "rabbitmq", DLQ: "bench.dlq", Identity: fmt.Sprint("e-", j),
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

// BenchmarkArrivals counts the last 24 hours' and 7 days' arrivals, with
// the 6 busiest groups, of a DLQ holding 300,000 entries over 35 days
// (one every 10 s): it reads only the window (the (dlq, received_at)
// index range), so it costs the window's entries, not the DLQ's.
// `go test -run NONE -bench Arrivals ./dlq/pgstore` runs it.
func BenchmarkArrivals(b *testing.B) {
	const n, batch = 300_000, 2000
	ctx := context.Background()
	s := newStore(b)
	end := time.Now()
	for i := 0; i < n; i += batch {
		rs := make([]dlq.Record, 0, batch)
		for j := i; j < i+batch; j++ {
			rs = append(rs, dlq.Record{
				Broker: "rabbitmq", DLQ: "bench.dlq", Identity: fmt.Sprint("e-", j),
				ReceivedAt: end.Add(-time.Duration(n-j) * 10 * time.Second),
				Entry:      dlq.Entry{ErrorClass: fmt.Sprint("app.Error", j%12), ErrorMessage: "failed", Worker: "billing", OriginalValue: []byte(`{"n":1}`)},
			})
		}
		if _, err := s.InsertBatch(ctx, rs); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE dlq_entries`); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    dlq.ArrivalsQuery
		want int64
	}{
		{"24h", dlq.ArrivalsDay("bench.dlq", end), 24 * 360},
		{"7d", dlq.ArrivalsWeek("bench.dlq", end), 7 * 24 * 360},
	} {
		tc.q.Groups = 6
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				a, err := s.Arrivals(ctx, tc.q)
				if err != nil || len(a.Groups) != 6 {
					b.Fatalf("Arrivals = %d groups, %v", len(a.Groups), err)
				}
				var total int64
				for _, c := range a.Counts {
					total += c
				}
				if total < tc.want/2 || total > tc.want {
					b.Fatalf("Arrivals counted %d, want about %d", total, tc.want)
				}
			}
		})
	}
}
