package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/heartbeat"
)

// monitorTypes is how many worker types the monitor scenario's workers are
// spread over.
const monitorTypes = 10

// runMonitor: heartbeat.Monitor.Check over MonitorWorkers RUNNING workers
// seeded in Redis under a key prefix of the run's own, deleted at the
// end: half the way redrive's publishers write them (a heartbeat key, the
// type's registry, the set of types), half the way a publisher in another
// language may (only the heartbeat key, docs/heartbeat-protocol.md), so
// that every check also discovers keys (SCAN) and the first records them.
// Checks are repeated Scrapes times; p50/p99 are per Check.
func runMonitor(ctx context.Context, cfg Config, prefix string) (rows []Row, err error) {
	if cfg.Progress != nil {
		cfg.Progress(ScenarioMonitor, Redis, ClientRedrive)
	}
	cfg.Logger.Info("bench: measuring", "scenario", ScenarioMonitor, "broker", Redis, "client", ClientRedrive)
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", cfg.RedisAddr, err)
	}
	keys := heartbeat.Keys{Prefix: prefix + ":"}
	written := []string{keys.Types()}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for start := 0; start < len(written); start += 1000 {
			if derr := rdb.Del(dctx, written[start:min(start+1000, len(written))]...).Err(); derr != nil && err == nil {
				err = fmt.Errorf("cleanup: delete keys: %w", derr)
			}
		}
	}()
	for t := range monitorTypes {
		typ := "type-" + strconv.Itoa(t)
		written = append(written, keys.Registry(typ), keys.Stopping(typ), keys.Discovered(typ))
	}
	now := time.Now()
	n := cfg.MonitorWorkers
	for start := 0; start < n; start += 1000 {
		_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i := start; i < min(start+1000, n); i++ {
				typ, inst := "type-"+strconv.Itoa(i%monitorTypes), "host-"+strconv.Itoa(i)
				data, err := json.Marshal(heartbeat.Heartbeat{Timestamp: now, Status: heartbeat.StatusRunning,
					LastMessageAt: now, ConsumerLag: int64(i % 7), StartedAt: now})
				if err != nil {
					return err
				}
				key := keys.Heartbeat(typ, inst)
				written = append(written, key)
				pipe.Set(ctx, key, data, 10*time.Minute)
				if i%2 == 0 { // the other half writes its key alone
					pipe.ZAdd(ctx, keys.Registry(typ), redis.Z{Score: float64(now.UnixMilli()) / 1e3, Member: inst})
					pipe.SAdd(ctx, keys.Types(), typ)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("seed heartbeats: %w", err)
		}
	}
	mon, err := heartbeat.NewMonitor(rdb, heartbeat.MonitorConfig{Prefix: keys.Prefix, MaxInstances: n})
	if err != nil {
		return nil, err
	}
	// Warm-up: connections, and the checks of a running monitor until
	// its discovery (a bounded SCAN per check) found and recorded the
	// key-only half.
	for i := 0; ; i++ {
		ws, err := mon.Check(ctx)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		if len(ws) == n {
			break
		}
		if i == 1000 {
			return nil, fmt.Errorf("check: %d workers after %d checks, want %d", len(ws), i+1, n)
		}
	}
	lat := make([]time.Duration, 0, cfg.Scrapes)
	m := startMeter()
	for range cfg.Scrapes {
		t0 := time.Now()
		ws, err := mon.Check(ctx)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		lat = append(lat, time.Since(t0))
		if len(ws) != n {
			return nil, fmt.Errorf("check: %d workers, want %d", len(ws), n)
		}
	}
	el, u := m.stop()
	r := row(ScenarioMonitor, Redis, ClientRedrive, n, el, u).withLatencies(lat)
	r.Rate = 0 // per check, not a message rate
	r = r.perCheck(cfg.Scrapes)
	r.Target = "p99 ≤ 100ms"
	r.Met = r.P99 <= 100*time.Millisecond
	r.Note = fmt.Sprintf("heartbeat.Monitor.Check over %d workers of %d types, half of which only write their key (messages = workers), %d checks; CPU and allocs per worker per check",
		n, monitorTypes, cfg.Scrapes)
	return []Row{r}, nil
}
