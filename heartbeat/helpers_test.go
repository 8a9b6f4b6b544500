package heartbeat

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestMain(m *testing.M) {
	// go-redis logs each failed dial to stderr; tests that point clients at
	// closed ports would flood the output.
	redis.SetLogger(RedisLogger(slog.New(slog.DiscardHandler)))
	os.Exit(m.Run())
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
	testenv.RedisClient(t) // fails the test when Redis does not answer
	c := client(t, testenv.Redis.URL())
	return c, testenv.RedisPrefix(t, c)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func redisZ(t time.Time, member string) redis.Z {
	return redis.Z{Score: unixSeconds(t), Member: member}
}
