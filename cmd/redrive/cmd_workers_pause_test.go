package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestWorkersPauseResume: pause and resume through the CLI (flags before
// or after the worker), what Redis then holds, and the refusals: no
// reason, an unknown worker, resuming a worker that is not paused.
func TestWorkersPauseResume(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	defer rdb.Close()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("Redis is required at %s: %v", testenv.Redis.URL(), err)
	}
	name := "i21-cli-" + broker.NewMessageID()[:6]
	keys := heartbeat.Keys{}
	rdb.SAdd(t.Context(), keys.Types(), name)
	t.Cleanup(func() {
		rdb.SRem(context.Background(), keys.Types(), name)
		rdb.Del(context.Background(), keys.Paused(name))
	})
	cfg := writeConfig(t, fmt.Sprintf("broker: rabbitmq\nredis: {addr: %q}\n", testenv.Redis.URL()))

	if code, _, errOut := cli(t, "workers", "pause", "--config", cfg, name); code != exitUsage || !strings.Contains(errOut, "reason") {
		t.Fatalf("pause without a reason: %d %s", code, errOut)
	}
	if code, _, errOut := cli(t, "workers", "pause", "--config", cfg, "--reason", "x", "--actor", "alice", name+"-typo"); code != exitUsage || !strings.Contains(errOut, "no such worker type") {
		t.Fatalf("pause of an unknown worker: %d %s", code, errOut)
	}
	code, out, errOut := cli(t, "workers", "pause", "--config", cfg, name, "--reason", "bank maintenance", "--actor", "alice")
	if code != exitOK || !strings.Contains(out, "paused "+name+" by alice: bank maintenance") {
		t.Fatalf("pause: %d %s%s", code, out, errOut)
	}
	p, ok, err := heartbeat.Pauses{RDB: rdb}.Get(t.Context(), name)
	if err != nil || !ok || p.Reason != "bank maintenance" || p.Actor != "alice" {
		t.Fatalf("Redis holds %+v %v %v", p, ok, err)
	}
	code, out, errOut = cli(t, "workers", "resume", "--config", cfg, "--actor", "bob", name)
	if code != exitOK || !strings.Contains(out, "resumed "+name+" by bob (paused by alice") {
		t.Fatalf("resume: %d %s%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, "workers", "resume", "--config", cfg, "--actor", "bob", name); code != exitUsage || !strings.Contains(errOut, "not paused") {
		t.Fatalf("resume of a running worker: %d %s", code, errOut)
	}
}
