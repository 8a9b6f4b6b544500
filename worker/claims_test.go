package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// TestRuntimeCountsClaims: with Config.ClaimsRedis, a handler runs with its claim
// counted in Redis (max_claims defaults to 5), the claim is released once
// the message is done, and the unavailable-claims counter is registered.
func TestRuntimeCountsClaims(t *testing.T) {
	rdb := testenv.RedisClient(t)
	id := broker.NewMessageID()[:6]
	name, topic := "claims-worker-"+id, "worker-test.claims."+id
	reg := prometheus.NewRegistry()
	yaml := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s, delay: {resolution: 100ms, factor: 2, levels: 2}}
workers:
  - {name: %s, topic: %s, retry: {max_retries: 1, backoff: 100ms}}
`, id, name, topic)
	rt, err := worker.Parse(t.Context(), []byte(yaml), quiet(worker.Config{Registerer: reg, ClaimsRedis: rdb}))
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	teardown(t, yaml)
	if got := rt.Subscriptions()[0].MaxClaims; got != broker.DefaultMaxClaims {
		t.Fatalf("max claims = %d, want the default %d", got, broker.DefaultMaxClaims)
	}
	key := driver.ClaimKey(name, "m1", strconv.Itoa(1))
	counted := make(chan string, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- rt.Run(ctx, worker.Handlers{name: func(ctx context.Context, d *broker.Delivery) error {
			v, err := rdb.Get(ctx, key).Result()
			if err != nil {
				v = err.Error()
			}
			counted <- v
			return nil
		}})
	}()
	if err := rt.Broker().Declare(t.Context(), rt.Subscriptions()...); err != nil {
		t.Fatal(err)
	}
	if err := rt.Broker().Publish(t.Context(), topic, broker.Message{ID: "m1", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-counted:
		if v != "1" {
			t.Errorf("claim count seen by the handler = %q, want 1", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("message not handled")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n, err := rdb.Exists(t.Context(), key).Result(); err != nil || n != 0 {
		t.Errorf("claim %s after the message was done: exists %d, %v; want released", key, n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "redrive_claims_unavailable_total" {
			return
		}
	}
	t.Error("redrive_claims_unavailable_total not registered")
}

// A worker that leaves max_claims to its default, run without a claim
// counter on a classic queue (the Quick Start), consumes without a word
// about max_claims; one that sets max_claims there is warned that nothing
// counts its claims.
func TestMaxClaimsDefaultIsNoWarning(t *testing.T) {
	for _, tt := range []struct {
		setting string
		warned  bool
	}{{"", false}, {"max_claims: 3, ", true}} {
		id := broker.NewMessageID()[:6]
		name, topic := "mc-"+id, "worker-test.mc."+id
		yaml := fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: "${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/}", prefix: worker-test-%s}
workers:
  - {name: %s, topic: %s, %sretry: {backoff: 1s}}
`, id, name, topic, tt.setting)
		var logs testenv.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		rt, err := worker.Parse(t.Context(), []byte(yaml), worker.Config{NoSignals: true, Logger: log})
		if err != nil {
			testenv.RabbitMQ.Fail(t, err)
		}
		teardown(t, yaml)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		handled := make(chan struct{}, 1)
		go func() {
			done <- rt.Run(ctx, worker.Handlers{name: func(context.Context, *broker.Delivery) error { handled <- struct{}{}; return nil }})
		}()
		if err := rt.Broker().Declare(t.Context(), rt.Subscriptions()...); err != nil {
			t.Fatal(err)
		}
		if err := rt.Broker().Publish(t.Context(), topic, broker.Message{Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-handled: // consuming: the warning, if any, is written
		case <-time.After(30 * time.Second):
			t.Fatal("message not handled")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if warned := strings.Contains(logs.String(), "max_claims is set but there is no claim counter"); warned != tt.warned {
			t.Errorf("%q: warned %v, want %v; logs:\n%s", tt.setting, warned, tt.warned, logs.String())
		}
	}
}
