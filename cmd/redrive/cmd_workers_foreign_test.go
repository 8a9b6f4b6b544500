package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// evil is what someone with write access to Redis puts in a name or a
// text: an OSC 52 clipboard write, a screen clear, a right-to-left
// override and a C1 CSI.
const evil = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e\u009b"

// TestWorkersValuesByHand: values written into Redis by hand — with
// redis-cli (installed with Redis) and raw go-redis commands, never
// redrive's publisher — under the configuration's redis.prefix. `redrive
// workers` (table and JSON), --retired, resume and pause neither fail nor
// print a character a terminal would obey; the issue's
// `ZADD workers:T 1e12 ghost` is a malformed row, not exit 1; an actor
// that is blank or escape-laden is refused (exit 2) before anything is
// written.
func TestWorkersValuesByHand(t *testing.T) {
	t.Parallel()
	rdb := testenv.RedisClient(t)
	prefix := testenv.RedisPrefix(t, rdb)
	ctx := t.Context()
	keys := heartbeat.Keys{Prefix: prefix}
	cfg := writeConfig(t, fmt.Sprintf("broker: rabbitmq\nredis: {addr: %q, prefix: %q}\nworkers: [{name: pay, topic: t}]\n",
		testenv.Redis.URL(), prefix))

	cliRedis, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli is not on PATH (Debian's redis-tools; .ci/run installs it): %v", err)
	}
	host, port, _ := strings.Cut(testenv.Redis.URL(), ":")
	redisCLI := func(args ...string) {
		t.Helper()
		out, err := exec.Command(cliRedis, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil || strings.HasPrefix(string(out), "(error)") || strings.HasPrefix(string(out), "ERR") {
			t.Fatalf("redis-cli %v: %v %s", args, err, out)
		}
	}
	redisCLI("ZADD", keys.Registry("T"), "1e12", "ghost")
	redisCLI("SADD", keys.Types(), "T")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	redisCLI("SET", keys.Heartbeat("T"+evil, "i"+evil), `{"timestamp":"`+now+`","status":"RUNNING`+evil+`"}`, "EX", "60")
	rdb.Set(ctx, keys.Heartbeat("T", "paused"), `{"timestamp":"`+now+`","status":"PAUSED","paused_by":"kill_switch`+evil+`","pause_reason":"r`+evil+`"}`, time.Minute)
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: keys.Audit(), Values: map[string]any{
		"action": "retire", "at": "1e300", "type": "T" + evil, "instance": "i" + evil, "actor": "a" + evil, "reason": "r" + evil, "last_seen": "x",
	}})
	rdb.HSet(ctx, keys.Paused("T"), "actor", "a"+evil, "reason", "r"+evil, "at", "1e12")

	code, out, errOut := cli(t, "workers", "--config", cfg)
	if code != exitCritical || !strings.Contains(out, "ghost") || !strings.Contains(out, `T\x1b]52`) {
		t.Errorf("workers: exit %d (want 4: pay never beat), stdout:\n%s%s", code, out, errOut)
	}
	assertTerminalSafe(t, "workers", out+errOut)

	code, out, errOut = cli(t, "workers", "--config", cfg, "--output", "json")
	var doc struct {
		Workers []struct{ Type, Instance, Status string } `json:"workers"`
	}
	if code != exitCritical || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Workers) != 4 {
		t.Errorf("workers --output json: exit %d, %d rows:\n%s%s", code, len(doc.Workers), out, errOut)
	}

	code, out, errOut = cli(t, "workers", "--config", cfg, "--retired", "5")
	if code != exitOK || !strings.Contains(out, `a\x1b]52`) {
		t.Errorf("workers --retired: exit %d:\n%s%s", code, out, errOut)
	}
	assertTerminalSafe(t, "workers --retired", out+errOut)

	for _, actor := range []string{" ", "ops" + evil, "al\u202eice"} {
		if code, _, errOut := cli(t, "workers", "pause", "T", "--config", cfg, "--reason", "r", "--actor", actor); code != exitUsage || !strings.Contains(errOut, "--actor") {
			t.Errorf("pause --actor %q: exit %d %s", actor, code, errOut)
		}
		if code, _, errOut := cli(t, "workers", "resume", "T", "--config", cfg, "--actor", actor); code != exitUsage {
			t.Errorf("resume --actor %q: exit %d %s", actor, code, errOut)
		}
		if code, _, errOut := cli(t, "workers", "retire", "T", "ghost", "--config", cfg, "--reason", "r", "--actor", actor); code != exitUsage {
			t.Errorf("retire --actor %q: exit %d %s", actor, code, errOut)
		}
	}
	if a, _ := rdb.HGet(ctx, keys.Paused("T"), "actor").Result(); a != "a"+evil {
		t.Errorf("a refused actor changed the pause: actor %q", a)
	}

	code, out, errOut = cli(t, "workers", "resume", "T", "--config", cfg, "--actor", "ops")
	if code != exitOK || !strings.Contains(out, `paused by a\x1b]52`) || !strings.Contains(out, "an unknown time") {
		t.Errorf("resume of a pause written by hand: exit %d:\n%s%s", code, out, errOut)
	}
	assertTerminalSafe(t, "workers resume", out+errOut)

	code, out, errOut = cli(t, "workers", "retire", "T", "ghost", "--config", cfg, "--reason", "written by hand", "--actor", "ops")
	if code != exitOK || !strings.Contains(out, "last beat -") {
		t.Errorf("retire the ghost: exit %d:\n%s%s", code, out, errOut)
	}
}
