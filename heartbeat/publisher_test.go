package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func newPublisher(t testing.TB, rdb redis.Cmdable, cfg PublisherConfig) *Publisher {
	t.Helper()
	p, err := NewPublisher(rdb, cfg)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	return p
}

func TestPublisherBeatWritesKeyAndRegistry(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	p := newPublisher(t, rdb, PublisherConfig{Type: "payout-executor", Instance: "host-1", Prefix: prefix, TTL: 30 * time.Second})
	handled := time.Date(2025, 1, 15, 10, 29, 58, 125e6, time.FixedZone("CET", 3600))
	p.MessageHandled(handled)
	p.SetLag(12)
	if err := p.Beat(ctx); err != nil {
		t.Fatalf("Beat: %v", err)
	}

	if got, want := p.Key(), prefix+"worker:payout-executor:host-1"; got != want {
		t.Errorf("Key() = %q, want %q", got, want)
	}
	raw, err := rdb.Get(ctx, p.Key()).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", p.Key(), err)
	}
	var wire map[string]any
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		t.Fatalf("heartbeat is not JSON: %q", raw)
	}
	for _, f := range []string{"timestamp", "status", "last_message_at", "consumer_lag"} {
		if _, ok := wire[f]; !ok {
			t.Errorf("heartbeat %s lacks field %q", raw, f)
		}
	}
	if wire["status"] != "RUNNING" || wire["consumer_lag"] != float64(12) || wire["last_message_at"] != "2025-01-15T09:29:58.125Z" {
		t.Errorf("heartbeat = %s, want RUNNING, lag 12, last_message_at 2025-01-15T09:29:58.125Z", raw)
	}
	ts, err := time.Parse(time.RFC3339, wire["timestamp"].(string))
	if err != nil || ts.Location() != time.UTC || time.Since(ts) > 5*time.Second {
		t.Errorf("timestamp %v (err %v) is not a recent RFC 3339 UTC time", wire["timestamp"], err)
	}
	ttl, err := rdb.PTTL(ctx, p.Key()).Result()
	if err != nil || ttl <= 25*time.Second || ttl > 30*time.Second {
		t.Errorf("PTTL = %s (err %v), want about 30s", ttl, err)
	}

	score, err := rdb.ZScore(ctx, prefix+"workers:payout-executor", "host-1").Result()
	if err != nil || time.Since(fromUnixSeconds(score)) > 5*time.Second {
		t.Errorf("registry score = %v (err %v), want about now", score, err)
	}
	if ok, err := rdb.SIsMember(ctx, prefix+"workers", "payout-executor").Result(); err != nil || !ok {
		t.Errorf("type set lacks payout-executor (err %v)", err)
	}
}

func TestPublisherRunBeatsThenShutsDown(t *testing.T) {
	rdb, prefix := newRedis(t)
	p := newPublisher(t, rdb, PublisherConfig{
		Type: "w", Instance: "i", Prefix: prefix,
		Interval: 20 * time.Millisecond, TTL: time.Second, ShutdownTTL: 7 * time.Second,
	})
	var mu sync.Mutex
	var beats []error
	enough := make(chan struct{})
	p.onBeat = func(s Status, err error) {
		mu.Lock()
		defer mu.Unlock()
		if s == StatusRunning {
			beats = append(beats, err)
			if len(beats) == 3 {
				close(enough)
			}
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-enough:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not beat 3 times within 5s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after its context ended, want nil", err)
	}
	mu.Lock()
	for i, err := range beats {
		if err != nil {
			t.Errorf("beat %d: %v", i, err)
		}
	}
	mu.Unlock()

	bg := context.Background()
	var hb Heartbeat
	raw, err := rdb.Get(bg, p.Key()).Bytes()
	if err != nil {
		t.Fatalf("GET after shutdown: %v", err)
	}
	if err := json.Unmarshal(raw, &hb); err != nil || hb.Status != StatusShuttingDown {
		t.Fatalf("heartbeat after shutdown = %s (err %v), want SHUTTING_DOWN", raw, err)
	}
	if ttl := rdb.PTTL(bg, p.Key()).Val(); ttl <= 6*time.Second || ttl > 7*time.Second {
		t.Errorf("SHUTTING_DOWN TTL = %s, want the shutdown TTL 7s", ttl)
	}
	if s := rdb.HGet(bg, prefix+"workers:w:stopping", "i").Val(); s == "" {
		t.Error("shutdown time not recorded in workers:w:stopping")
	}

	if err := p.Deregister(bg); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	if n := rdb.Exists(bg, p.Key(), prefix+"workers:w:stopping").Val(); n != 0 {
		t.Errorf("%d keys left after Deregister", n)
	}
	if _, err := rdb.ZScore(bg, prefix+"workers:w", "i").Result(); err == nil {
		t.Error("registry entry left after Deregister")
	}
}

// A publisher whose Redis is unreachable keeps beating (failing), logs the
// outage once, and Run returns only when its context ends.
func TestPublisherUnreachableRedisLogsOnce(t *testing.T) {
	logs := &testenv.Logs{}
	redis.SetLogger(RedisLogger(slog.New(logs)))
	t.Cleanup(func() { redis.SetLogger(RedisLogger(slog.New(slog.DiscardHandler))) })
	rdb := client(t, testenv.ClosedAddr(t))
	p := newPublisher(t, rdb, PublisherConfig{
		Type: "w", Instance: "i", Interval: 10 * time.Millisecond, TTL: time.Second,
		Logger: slog.New(logs),
	})
	failed := make(chan error, 100)
	p.onBeat = func(s Status, err error) {
		if s == StatusRunning {
			failed <- err
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for i := range 5 {
		select {
		case err := <-failed:
			if err == nil {
				t.Fatalf("beat %d to a closed port succeeded", i)
			}
		case err := <-done:
			t.Fatalf("Run returned %v while Redis was down, want it to keep running", err)
		case <-time.After(5 * time.Second):
			t.Fatalf("no beat %d within 5s", i)
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("Run returned nil although the SHUTTING_DOWN write failed")
	}
	if n := logs.Count(slog.LevelWarn, "redis unreachable"); n != 1 {
		t.Errorf("logged the outage %d times over 5+ failed beats, want once; logs: %q", n, logs.All())
	}
	if n := logs.CountAbove(slog.LevelDebug); n != 1 {
		t.Errorf("logged %d records above debug, want 1: %q", n, logs.All())
	}
	if n := logs.Count(slog.LevelDebug, "failed to dial"); n == 0 {
		t.Errorf("go-redis's dial failures did not reach the RedisLogger adapter: %q", logs.All())
	}
}

// An outage and a recovery: one warning per outage, one info per recovery,
// and beats land again once Redis is back.
func TestPublisherResumesAfterOutage(t *testing.T) {
	_, prefix := newRedis(t)
	px := tcpproxy.New(t, testenv.Redis.URL())
	logs := &testenv.Logs{}
	rdb := client(t, px.Addr())
	direct, _ := newRedis(t)
	p := newPublisher(t, rdb, PublisherConfig{Type: "w", Instance: "i", Prefix: prefix, Logger: slog.New(logs)})
	ctx := t.Context()

	if err := p.Beat(ctx); err != nil {
		t.Fatalf("first beat: %v", err)
	}
	for outage := 1; outage <= 2; outage++ {
		px.SetUp(false)
		for range 3 {
			if err := p.Beat(ctx); err == nil {
				t.Fatalf("outage %d: beat through a cut proxy succeeded", outage)
			}
		}
		if n := logs.Count(slog.LevelWarn, "redis unreachable"); n != outage {
			t.Fatalf("after outage %d: %d warnings, want %d: %q", outage, n, outage, logs.All())
		}
		direct.Del(ctx, p.Key())
		px.SetUp(true)
		if err := p.Beat(ctx); err != nil {
			t.Fatalf("outage %d: beat after Redis came back: %v", outage, err)
		}
		if n := logs.Count(slog.LevelInfo, "reachable again"); n != outage {
			t.Fatalf("after recovery %d: %d recovery messages, want %d: %q", outage, n, outage, logs.All())
		}
		if direct.Exists(ctx, p.Key()).Val() != 1 {
			t.Fatalf("outage %d: heartbeat key not written after recovery", outage)
		}
	}
}

func TestMessageHandledKeepsLatestUnderConcurrency(t *testing.T) {
	p := newPublisher(t, client(t, testenv.ClosedAddr(t)), PublisherConfig{Type: "w", Instance: "i"})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				p.MessageHandled(base.Add(time.Duration(i*8+g) * time.Millisecond))
				p.SetLag(int64(i))
			}
		})
	}
	wg.Wait()
	if got, want := p.Snapshot(StatusRunning).LastMessageAt, base.Add(7999*time.Millisecond); !got.Equal(want) {
		t.Errorf("LastMessageAt = %s, want the latest %s", got, want)
	}
	p.MessageHandled(base) // older: ignored
	if got := p.Snapshot(StatusRunning).LastMessageAt; !got.Equal(base.Add(7999 * time.Millisecond)) {
		t.Errorf("an older MessageHandled moved LastMessageAt back to %s", got)
	}
}

func BenchmarkMessageHandled(b *testing.B) {
	p, err := NewPublisher(nil, PublisherConfig{Type: "w", Instance: "i"})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			p.MessageHandled(now.Add(time.Duration(i)))
			p.SetLag(int64(i))
		}
	})
}

func TestPublisherConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  PublisherConfig
		want string // substring of the error; "" = valid
	}{
		{"minimal", PublisherConfig{Type: "w"}, ""},
		{"full", PublisherConfig{Type: "w", Instance: "i", Interval: time.Second, TTL: 3 * time.Second}, ""},
		{"no type", PublisherConfig{}, "type is empty"},
		{"colon in type", PublisherConfig{Type: "a:b"}, "contains ':'"},
		{"negative interval", PublisherConfig{Type: "w", Interval: -1}, "interval"},
		{"ttl not above interval", PublisherConfig{Type: "w", Interval: time.Second, TTL: time.Second}, "must exceed interval"},
		{"negative shutdown ttl", PublisherConfig{Type: "w", ShutdownTTL: -1}, "shutdown ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidConfig) || !contains(err.Error(), tt.want)):
				t.Fatalf("Validate() = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
	d := PublisherConfig{Type: "w"}.WithDefaults()
	if d.Interval != 10*time.Second || d.TTL != 30*time.Second || d.ShutdownTTL != 60*time.Second || d.Instance == "" || d.Logger == nil {
		t.Errorf("defaults = %+v, want 10s / 30s / 60s, an instance and a logger", d)
	}
	if d.Instance != DefaultInstance() {
		t.Errorf("default instance %q, want hostname-pid %q", d.Instance, DefaultInstance())
	}
}

// TestPublisherAsksLagBeforeEachBeat: with PublisherConfig.Lag every beat
// reports the lag it measures; a failed measurement keeps the last value
// and is logged once per failure streak.
func TestPublisherAsksLagBeforeEachBeat(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	var (
		mu   sync.Mutex
		lag  int64 = 7
		fail error
	)
	logs := &testenv.Logs{}
	p := newPublisher(t, rdb, PublisherConfig{Type: "w", Instance: "i", Prefix: prefix, Logger: slog.New(logs),
		Lag: func(context.Context) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			return lag, fail
		}})
	beatLag := func() int64 {
		t.Helper()
		if err := p.Beat(ctx); err != nil {
			t.Fatalf("Beat: %v", err)
		}
		raw, err := rdb.Get(ctx, p.Key()).Result()
		if err != nil {
			t.Fatal(err)
		}
		var hb Heartbeat
		if err := json.Unmarshal([]byte(raw), &hb); err != nil {
			t.Fatal(err)
		}
		return hb.ConsumerLag
	}
	if got := beatLag(); got != 7 {
		t.Fatalf("consumer_lag = %d, want 7", got)
	}
	mu.Lock()
	lag, fail = 0, errors.New("broker gone")
	mu.Unlock()
	for range 3 {
		if got := beatLag(); got != 7 {
			t.Fatalf("consumer_lag while the measurement fails = %d, want the last value 7", got)
		}
	}
	if n := logs.Count(slog.LevelWarn, "heartbeat: consumer lag cannot be measured; heartbeats report the last known lag"); n != 1 {
		t.Errorf("failure logged %d times, want once: %v", n, logs.All())
	}
	mu.Lock()
	lag, fail = 3, nil
	mu.Unlock()
	if got := beatLag(); got != 3 {
		t.Fatalf("consumer_lag after recovery = %d, want 3", got)
	}
}
