package claims_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestClaimCountsAndReleaseForgets(t *testing.T) {
	rdb := testenv.RedisClient(t)
	c := newCounter(t, rdb, claims.Config{TTL: time.Minute})
	key := driver.ClaimKey("g-"+broker.NewMessageID()[:6], "id", "1")
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	for want := int64(1); want <= 3; want++ {
		n, err := c.Claim(t.Context(), key)
		if err != nil || n != want {
			t.Fatalf("Claim #%d = %d, %v; want %d, nil", want, n, err, want)
		}
	}
	if ttl := rdb.TTL(t.Context(), key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL = %s, want within (0, 1m]", ttl)
	}
	if err := c.Release(t.Context(), key); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n, err := c.Claim(t.Context(), key); err != nil || n != 1 {
		t.Errorf("Claim after Release = %d, %v; want 1, nil", n, err)
	}
}

// TestProcessCountsClaims: the pipeline counts claims in the counter and
// dead-letters the claim over MaxClaims without calling the handler.
func TestProcessCountsClaims(t *testing.T) {
	rdb := testenv.RedisClient(t)
	key := driver.ClaimKey("g-"+broker.NewMessageID()[:6], "id", "1")
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	calls := 0
	h := func(context.Context, *broker.Delivery) error { calls++; return nil }
	p := driver.NewPipeline(broker.Subscription{Group: "g", MaxClaims: 2, Claims: newCounter(t, rdb, claims.Config{})}, nil)
	var got []bool
	for range 3 {
		dec := p.Process(t.Context(), &broker.Delivery{}, h, driver.Input{ClaimKey: key})
		got = append(got, dec.Action == driver.ActionDeadLetter && dec.Outcome.Reason == driver.ReasonMaxClaims)
	}
	if want := []bool{false, false, true}; !equal(got, want) || calls != 2 {
		t.Errorf("over per claim = %v, handler calls %d; want %v, 2", got, calls, want)
	}
	off := driver.NewPipeline(broker.Subscription{Group: "g", Claims: newCounter(t, rdb, claims.Config{})}, nil) // MaxClaims 0
	if dec := off.Process(t.Context(), &broker.Delivery{}, h, driver.Input{ClaimKey: key}); dec.Action != driver.ActionAck || calls != 3 {
		t.Errorf("Process with max claims 0 = %v, handler calls %d; want ack, 3 (not counted)", dec.Action, calls)
	}
	if n, _ := rdb.Get(t.Context(), key).Int64(); n != 3 {
		t.Errorf("count = %d, want 3 (max claims 0 does not count)", n)
	}
}

// newCounter returns claims.New(rdb, cfg), failing t on an error.
func newCounter(t *testing.T, rdb redis.Cmdable, cfg claims.Config) *claims.Counter {
	t.Helper()
	c, err := claims.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRedisDownFallsBackToHandling(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	var logs testenv.Buffer
	c := newCounter(t, rdb, claims.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	p := driver.NewPipeline(broker.Subscription{Group: "g", MaxClaims: 1, Claims: c}, nil)
	ok := func(context.Context, *broker.Delivery) error { return nil }
	for i := range 5 {
		if dec := p.Process(t.Context(), &broker.Delivery{}, ok, driver.Input{ClaimKey: "k"}); dec.Action != driver.ActionAck {
			t.Fatalf("claim %d with Redis down: %v; want handled (ack)", i+1, dec.Action)
		}
	}
	if _, err := c.Claim(t.Context(), "k"); !errors.Is(err, claims.ErrUnavailable) {
		t.Errorf("Claim error = %v, want ErrUnavailable", err)
	}
	if got := c.Unavailable(); got != 6 {
		t.Errorf("redrive_claims_unavailable_total = %v, want 6", got)
	}
	if n := strings.Count(logs.String(), "redis unavailable"); n != 1 {
		t.Errorf("outage logged %d times, want once:\n%s", n, logs.String())
	}
}

func TestRedisSlowDoesNotStall(t *testing.T) {
	// A listener that accepts and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr().String(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := newCounter(t, rdb, claims.Config{Timeout: 50 * time.Millisecond})
	start := time.Now()
	if _, err := c.Claim(t.Context(), "k"); !errors.Is(err, claims.ErrUnavailable) {
		t.Errorf("Claim error = %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Claim took %s against a silent Redis, want about the 50ms timeout", took)
	}
}

// TestClaimKeysWrittenByHand: under a prefix (redis.prefix), a claim key
// holding what someone else wrote — text, a hash, a count below 1 — is
// replaced by this claim's count 1 (and logged), never an outage: the
// message keeps its poison-pill protection.
func TestClaimKeysWrittenByHand(t *testing.T) {
	rdb := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, rdb)
	logs := &testenv.Logs{}
	c := newCounter(t, rdb, claims.Config{TTL: time.Minute, Prefix: prefix, Logger: slog.New(logs)})
	ctx := t.Context()
	for name, write := range map[string]func(key string){
		"text":     func(k string) { rdb.Set(ctx, k, "not a count", time.Minute) },
		"hash":     func(k string) { rdb.HSet(ctx, k, "a", "b") },
		"negative": func(k string) { rdb.Set(ctx, k, "-1000", time.Minute) },
		"too big":  func(k string) { rdb.Set(ctx, k, "9223372036854775807", time.Minute) },
	} {
		key := driver.ClaimKey("hand", name, "1")
		write(prefix + key)
		if n, err := c.Claim(ctx, key); err != nil || n != 1 {
			t.Errorf("%s: Claim = %d, %v; want 1, nil", name, n, err)
		}
		if n, err := c.Claim(ctx, key); err != nil || n != 2 {
			t.Errorf("%s: second Claim = %d, %v; want 2, nil", name, n, err)
		}
		if ttl := rdb.TTL(ctx, prefix+key).Val(); ttl <= 0 {
			t.Errorf("%s: the reset key has no TTL (%s)", name, ttl)
		}
	}
	if got := logs.Count(slog.LevelWarn, "claims: a claim key held no count (written by someone else); counting starts again at 1"); got != 4 {
		t.Errorf("%d warnings, want one per key: %v", got, logs.All())
	}
	if c.Unavailable() != 0 {
		t.Errorf("%v claims counted as unavailable, want none: Redis answered", c.Unavailable())
	}
	if n, _ := rdb.Exists(ctx, driver.ClaimKey("hand", "text", "1")).Result(); n != 0 {
		t.Error("a claim key was written without the prefix")
	}
}
