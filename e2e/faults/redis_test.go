//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitBeat waits (10 s at most) for a heartbeat at key newer than after.
// Redis has no event to await here, so it polls at the beat interval.
func waitBeat(t testing.TB, rdb *redis.Client, key string, after time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var hb struct {
			Timestamp time.Time `json:"timestamp"`
		}
		v, err := rdb.Get(context.Background(), key).Result()
		if err == nil && json.Unmarshal([]byte(v), &hb) == nil && hb.Timestamp.After(after) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat at %s newer than %s after 10 s (last: %q, %v)", key, after.Format(time.RFC3339Nano), v, err)
		}
		time.Sleep(100 * time.Millisecond) // the beat interval
	}
}
