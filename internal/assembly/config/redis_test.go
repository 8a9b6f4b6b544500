package config

import (
	"strings"
	"testing"
)

// TestRedisSection: redis.prefix (default none, legal characters only),
// heartbeat.max_instances (default 10000, positive), and whether the file
// has a redis: section at all (worker.Load beats only then).
func TestRedisSection(t *testing.T) {
	c := mustParse(t, "broker: rabbitmq\n", nil)
	if c.Redis.Configured() || c.Redis.Prefix != "" || c.Heartbeat.MaxInstances != 10000 {
		t.Errorf("without redis: Configured %v, prefix %q, max_instances %d", c.Redis.Configured(), c.Redis.Prefix, c.Heartbeat.MaxInstances)
	}
	c = mustParse(t, "broker: rabbitmq\nredis: {prefix: \"payments:\"}\nheartbeat: {max_instances: 50}\n", nil)
	if !c.Redis.Configured() || c.Redis.Prefix != "payments:" || c.Redis.Addr != DefaultRedisAddr || c.Heartbeat.MaxInstances != 50 {
		t.Errorf("with redis: %+v, max_instances %d", c.Redis, c.Heartbeat.MaxInstances)
	}
	for doc, want := range map[string]string{
		"redis: {prefix: \"a b\"}":                         "redis.prefix",
		"redis: {prefix: \"x*\"}":                          "redis.prefix",
		"redis: {prefix: \"\\e]52\"}":                      "redis.prefix",
		"redis: {prefix: " + strings.Repeat("p", 65) + "}": "redis.prefix",
		"heartbeat: {max_instances: -1}":                   "heartbeat.max_instances",
	} {
		_, err := parse([]byte("broker: rabbitmq\n"+doc+"\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", doc, err, want)
		}
	}
}
