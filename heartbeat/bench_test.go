package heartbeat

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// seedWorkers writes n RUNNING heartbeats spread over 10 types the way
// publishers do, in a few pipelines.
func seedWorkers(t testing.TB, rdb *redis.Client, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	keys := Keys{Prefix: prefix}
	now := time.Now()
	for start := 0; start < n; start += 1000 {
		_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i := start; i < min(start+1000, n); i++ {
				typ, inst := "type-"+strconv.Itoa(i%10), "host-"+strconv.Itoa(i)
				data, _ := json.Marshal(Heartbeat{Timestamp: now, Status: StatusRunning, LastMessageAt: now, ConsumerLag: int64(i % 7), StartedAt: now})
				pipe.Set(ctx, keys.Heartbeat(typ, inst), data, time.Minute)
				pipe.ZAdd(ctx, keys.Registry(typ), redis.Z{Score: unixSeconds(now), Member: inst})
				pipe.SAdd(ctx, keys.Types(), typ)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
}

// BenchmarkMonitorCheck10k measures one Check over 10,000 workers (three
// round trips, 10 MGETs, 10,000 JSON decodes).
func BenchmarkMonitorCheck10k(b *testing.B) {
	rdb, prefix := newRedis(b)
	seedWorkers(b, rdb, prefix, 10000)
	m := newMonitor(b, rdb, MonitorConfig{Prefix: prefix})
	b.ResetTimer()
	for b.Loop() {
		rows, err := m.Check(context.Background())
		if err != nil || len(rows) != 10000 {
			b.Fatalf("Check: %d rows, %v", len(rows), err)
		}
	}
}

// TestMonitorCheck10kWorkers checks that a monitor reads and grades
// 10,000 workers correctly. How long it takes is measured by
// BenchmarkMonitorCheck and recorded in BENCHMARKS.md, never asserted in a
// test.
func TestMonitorCheck10kWorkers(t *testing.T) {
	rdb, prefix := newRedis(t)
	seedWorkers(t, rdb, prefix, 10000)
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix})
	start := time.Now()
	rows, err := m.Check(t.Context())
	if err != nil || len(rows) != 10000 {
		t.Fatalf("Check: %d rows, %v", len(rows), err)
	}
	t.Logf("Check over 10,000 workers: %s", time.Since(start))
}
