// Package testenv is the environment of redrive's tests: the services they
// run on (RabbitMQ, Redis, PostgreSQL; Kafka is kfake in-process, see
// broker/kafka/kafkatest), names of each test's own on those shared
// services, and their cleanup.
//
// Every service is read from its environment variable with the local
// default of make test (RabbitMQ.URL, Redis.URL, PostgreSQL.URL). A
// service a test cannot reach fails the test with one line naming the
// service and its variable (Service.Fail): the tests never skip. Names
// (Name, Schema) start with the test's name and end with a random suffix,
// so tests may run in parallel and side by side with other runs on the
// same services; what a test creates under them is deleted when it ends
// (RedisPrefix, DeleteTopology, Schema).
//
// It is test support: only _test files and the e2e suites import it.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Service is a service the tests need: its name, the variable that
// locates it and the local default.
type Service struct {
	// Name is the service's name in messages ("RabbitMQ").
	Name string
	// Env is the variable that locates it ("RABBITMQ_URL").
	Env string
	// Default is where it is when Env is unset: the local service of
	// make test.
	Default string
}

// The services of the tests, at the addresses of make test by default.
var (
	// RabbitMQ is RABBITMQ_URL, default the local guest account.
	RabbitMQ = Service{Name: "RabbitMQ", Env: "RABBITMQ_URL", Default: "amqp://guest:guest@127.0.0.1:5672/"}
	// Redis is REDIS_ADDR (host:port), default the local Redis.
	Redis = Service{Name: "Redis", Env: "REDIS_ADDR", Default: "127.0.0.1:6379"}
	// PostgreSQL is DATABASE_URL, default the local test database.
	PostgreSQL = Service{Name: "PostgreSQL", Env: "DATABASE_URL", Default: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"}
)

// URL returns the service's address: its variable, else its default.
func (s Service) URL() string {
	if v := os.Getenv(s.Env); v != "" {
		return v
	}
	return s.Default
}

// Fail fails t because the service cannot be reached: the tests never
// skip a required service. The message names the service, where it was
// looked for (without a password) and the variable that moves it.
func (s Service) Fail(t testing.TB, err error) {
	t.Helper()
	t.Fatalf("%s is required at %s (set %s): %v", s.Name, redacted(s.URL()), s.Env, err)
}

// redacted hides the password of a URL.
func redacted(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// Name returns a name of t's own on the shared services: "rt-", t's name
// (lower case, letters and digits, at most 24 characters) and a random
// suffix, joined by '-'. It is a valid queue, exchange, topic, Redis key
// prefix and, with Schema, PostgreSQL schema.
func Name(t testing.TB) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() >= 24 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return "rt-" + strings.TrimSuffix(b.String(), "-") + "-" + RandomHex(4)
}

// RandomHex returns n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ClosedAddr returns a loopback address on which nothing listens, for a
// server the test starts next. Its port is from closedPortMin to
// closedPortMax-1, below the kernel's ephemeral range (Linux: from 32768):
// a port from that range (":0") is also what every outgoing connection
// binds, and one of them could take it before the server does (seen:
// "bind: address already in use" for a port picked this way while other
// packages' tests ran). The range also stays clear of the RabbitMQ
// nodes' distribution ports (AMQP port + 20000, internal/testsupport/rabbitcluster).
func ClosedAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		port := closedPortMin + mrand.IntN(closedPortMax-closedPortMin)
		if addr, err := listenClose(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return addr
		}
	}
	addr, err := listenClose("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// The ports ClosedAddr picks from.
const (
	closedPortMin = 10_000
	closedPortMax = 20_000
)

// listenClose listens on addr and closes at once: it returns the address
// that was free.
func listenClose(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Eventually polls cond every 10 ms until it holds, failing t with what
// after timeout. It waits for time-driven state (key expiry, thresholds,
// a sampler's next tick) that no event announces.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
