package mem_test

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/e2e"
)

// TestE2E runs the end-to-end suite, then the dead-letter operations
// suite (the keeper storing in PostgreSQL, replay, discard; it needs
// PostgreSQL, see testenv.PostgreSQL) and the same on the in-memory store
// (dlq/memstore), unchanged, on a Server on the wall clock, in both retry
// modes, and the relay suite (handlers behind HTTP endpoints) once.
func TestE2E(t *testing.T) {
	for _, mode := range []broker.RetryMode{broker.Blocking, broker.NonBlocking} {
		t.Run(string(mode), func(t *testing.T) {
			env := memEnv(t, mode)
			e2e.Run(t, env)
			t.Run("DLQ", func(t *testing.T) { e2e.RunDLQ(t, env) })
			t.Run("DLQMemstore", func(t *testing.T) {
				env := env
				env.Store = func(testing.TB) dlq.Store { return memstore.New(memstore.Config{Logger: quiet}) }
				e2e.RunDLQ(t, env)
			})
		})
	}
	t.Run("Relay", func(t *testing.T) { e2e.RunRelay(t, memEnv(t, "")) })
}

// memEnv is the suite's environment on a new Server: every broker the
// suite opens is a connection to it, as every process's is to one real
// broker.
func memEnv(t *testing.T, mode broker.RetryMode) e2e.Env {
	srv, err := mem.NewServer(mem.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return e2e.Env{
		Name:        mem.Name,
		New:         func(testing.TB) broker.Broker { return srv.Connect(mem.BrokerConfig{Logger: quiet}) },
		DeadLetters: deadLetterProbe(srv),
		Resolution:  50 * time.Millisecond,
		Router:      mem.Router{},
		RawPublish: func(t testing.TB, topic string, key, value []byte, headers map[string][]byte) {
			t.Helper()
			h := make(map[string]string, len(headers))
			for k, v := range headers {
				h[k] = string(v)
			}
			if err := srv.Inject(topic, key, value, h); err != nil {
				t.Fatalf("inject: %v", err)
			}
		},
		RetryMode: mode,
	}
}

// deadLetterProbe waits, without polling, until want dead letters of
// (topic, group) are in srv's DLQ, keeps watching for quiet, and returns
// them all.
func deadLetterProbe(srv *mem.Server) func(ctx context.Context, t testing.TB, topic, group string, want int, quiet time.Duration) []dlq.Entry {
	return func(ctx context.Context, t testing.TB, topic, group string, want int, quiet time.Duration) []dlq.Entry {
		t.Helper()
		for {
			changed := srv.Changed()
			got := srv.DeadLetters(topic, group)
			if len(got) >= want {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("%d dead letters of %s/%s, want %d: %v", len(got), topic, group, want, ctx.Err())
			}
		}
		select {
		case <-time.After(quiet): // extra entries would arrive now
		case <-ctx.Done():
		}
		return srv.DeadLetters(topic, group)
	}
}
