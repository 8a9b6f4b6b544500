package heartbeat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	// go-redis logs each failed dial to stderr; tests that point clients at
	// closed ports would flood the output.
	redis.SetLogger(RedisLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
}

// redisAddr is the Redis the tests use: REDIS_ADDR or 127.0.0.1:6379.
func redisAddr() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// client returns a go-redis client for addr tuned to fail fast.
func client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:            addr,
		DialTimeout:     300 * time.Millisecond,
		ReadTimeout:     time.Second,
		WriteTimeout:    time.Second,
		MaxRetries:      -1,
		DialerRetries:   1,
		DisableIdentity: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newRedis connects to the test Redis (failing the test when it is
// unreachable) and returns a client and a key prefix of the test's own,
// whose keys are deleted when the test ends.
func newRedis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	c := client(t, redisAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis is required at %s (set REDIS_ADDR): %v", redisAddr(), err)
	}
	prefix := "redrive-test:" + randHex(4) + ":"
	t.Cleanup(func() { deletePrefix(t, c, prefix) })
	return c, prefix
}

func deletePrefix(t testing.TB, c *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			c.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Unlink(ctx, keys...)
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleanup of %s*: %v", prefix, err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// closedAddr returns an address on which nothing listens.
func closedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// count returns how many records of level contain msg.
func (h *logRecorder) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}

// countAbove returns how many records are above level.
func (h *logRecorder) countAbove(level slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level > level {
			n++
		}
	}
	return n
}

func (h *logRecorder) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		out = append(out, r.Level.String()+" "+r.Message)
	}
	return out
}

// eventually polls cond every 10 ms until it holds or timeout passes; it
// waits for time-driven state (key expiry, thresholds) to be reached.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func redisZ(t time.Time, member string) redis.Z {
	return redis.Z{Score: unixSeconds(t), Member: member}
}
