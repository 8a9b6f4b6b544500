package heartbeat

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every value in these tests is written by hand with raw go-redis
// commands, as a worker in another language or an operator with redis-cli
// writes it: never through Publisher.

// rowOf returns the row of typ/instance, failing when there is none.
func rowOf(t testing.TB, rows []WorkerStatus, typ, instance string) WorkerStatus {
	t.Helper()
	for _, r := range rows {
		if r.Type == typ && r.Instance == instance {
			return r
		}
	}
	t.Fatalf("no row %s/%s among %d: %+v", typ, instance, len(rows), rows)
	return WorkerStatus{}
}

// mustCheck runs a check that must succeed and whose rows must encode as
// JSON (what /healthz and `redrive workers --output json` do with them).
func mustCheck(t testing.TB, m *Monitor) []WorkerStatus {
	t.Helper()
	rows, err := m.Check(context.Background())
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := json.Marshal(rows); err != nil {
		t.Fatalf("the rows do not encode as JSON (a 500 on /healthz): %v", err)
	}
	return rows
}

// TestKeyAloneIsSeen: a publisher that writes only worker:{type}:{id}
// (no registry) is seen, graded and exported in every timestamp form the
// usual serializers write; once its key expires it reads MISSING (the
// monitor recorded it), and one that said SHUTTING_DOWN is forgotten.
func TestKeyAloneIsSeen(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	now := time.Now().UTC()
	forms := map[string]string{
		"jackson-nanos": now.Format("2006-01-02T15:04:05.000000000Z"),
		"seconds":       now.Format("2006-01-02T15:04:05Z"),
		"micros-offset": now.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.000000-07:00"),
		"lower-case":    strings.ToLower(now.Format("2006-01-02T15:04:05.0Z")),
	}
	for inst, ts := range forms {
		v := `{"timestamp": "` + ts + `", "status": "RUNNING", "last_message_at": null, "consumer_lag": 3}`
		if err := rdb.Set(ctx, keys.Heartbeat("spring-consumer", inst), v, 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	millis := `{"timestamp":` + strconv.FormatInt(now.UnixMilli(), 10) + `,"status":"RUNNING","last_message_at":` +
		strconv.FormatInt(now.Add(-time.Second).UnixMilli(), 10) + `,"consumer_lag":0}`
	rdb.Set(ctx, keys.Heartbeat("spring-consumer", "epoch-millis"), millis, 30*time.Second)
	rdb.Set(ctx, keys.Heartbeat("spring-consumer", "leaving"), `{"timestamp":"`+now.Format(time.RFC3339Nano)+`","status":"SHUTTING_DOWN"}`, 60*time.Second)

	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MissingAfter: 1500 * time.Millisecond, ForgetAfter: time.Hour})
	rows := mustCheck(t, m)
	if len(rows) != len(forms)+2 {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(forms)+2, rows)
	}
	for inst := range forms {
		r := rowOf(t, rows, "spring-consumer", inst)
		wantRow(t, r, StatusRunning, SeverityOK, ConditionOK)
		if d := r.LastSeen.Sub(now); d > time.Millisecond || d < -time.Second {
			t.Errorf("%s: last seen %s, want %s", inst, r.LastSeen, now)
		}
		if r.Lag != 3 {
			t.Errorf("%s: lag %d, want 3", inst, r.Lag)
		}
	}
	if r := rowOf(t, rows, "spring-consumer", "epoch-millis"); !r.LastSeen.Equal(time.UnixMilli(now.UnixMilli())) ||
		!r.LastMessageAt.Equal(time.UnixMilli(now.Add(-time.Second).UnixMilli())) {
		t.Errorf("epoch millis read as %s, %s", r.LastSeen, r.LastMessageAt)
	}
	wantRow(t, rowOf(t, rows, "spring-consumer", "leaving"), StatusShuttingDown, SeverityOK, ConditionShuttingDown)
	if ok, _ := rdb.SIsMember(ctx, keys.Types(), "spring-consumer").Result(); !ok {
		t.Error("the type of instances found by their key alone is not in the set of types (pause would refuse it)")
	}

	// Every key expires (the processes died; the one leaving left).
	var dels []string
	for inst := range forms {
		dels = append(dels, keys.Heartbeat("spring-consumer", inst))
	}
	rdb.Del(ctx, append(dels, keys.Heartbeat("spring-consumer", "epoch-millis"), keys.Heartbeat("spring-consumer", "leaving"))...)
	time.Sleep(time.Until(now.Add(1600 * time.Millisecond))) // MissingAfter passes: the time-driven state under test
	rows = mustCheck(t, m)
	if len(rows) != len(forms)+1 {
		t.Fatalf("after the keys expired: %d rows, want %d (the one that shut down forgotten): %+v", len(rows), len(forms)+1, rows)
	}
	for _, r := range rows {
		if r.Instance == "leaving" {
			t.Errorf("the instance that said SHUTTING_DOWN is still reported: %+v", r)
		}
		wantRow(t, r, StatusMissing, SeverityCritical, ConditionMissing)
	}
}

// TestHandWrittenValues: whatever someone writes into the keys the
// monitor reads, every check succeeds, its rows encode as JSON, and an
// unreadable value is one malformed row naming what is wrong.
func TestHandWrittenValues(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	now := time.Now().UTC()
	ts := `"` + now.Format(time.RFC3339Nano) + `"`
	nested := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	values := []struct {
		inst, value, want string // want: in the reason; "" = a good heartbeat
	}{
		{"empty", "", "empty"},
		{"null", "null", "timestamp is missing"},
		{"array", "[]", "not an object"},
		{"number", "42", "not an object"},
		{"no-timestamp", `{"status":"RUNNING"}`, "timestamp is missing"},
		{"words", `{"timestamp":"yesterday","status":"RUNNING"}`, "not an RFC 3339 time"},
		{"naive", `{"timestamp":"2025-01-15T10:30:00.123456","status":"RUNNING"}`, "no time zone"},
		{"epoch-seconds", `{"timestamp":` + strconv.FormatInt(now.Unix(), 10) + `,"status":"RUNNING"}`, "epoch seconds"},
		{"year-1", `{"timestamp":"0001-01-01T00:00:00Z","status":"RUNNING"}`, "before 2000"},
		{"far-future", `{"timestamp":"9999-12-31T23:59:59Z","status":"RUNNING"}`, "in the future"},
		{"huge-millis", `{"timestamp":1e300,"status":"RUNNING"}`, "neither"},
		{"negative-lag", `{"timestamp":` + ts + `,"status":"RUNNING","consumer_lag":-5}`, "negative"},
		{"fraction-lag", `{"timestamp":` + ts + `,"status":"RUNNING","consumer_lag":1.5}`, "consumer_lag"},
		{"huge-lag", `{"timestamp":` + ts + `,"status":"RUNNING","consumer_lag":1e30}`, "consumer_lag"},
		{"string-lag", `{"timestamp":` + ts + `,"status":"RUNNING","consumer_lag":"7"}`, "consumer_lag"},
		{"status-number", `{"timestamp":` + ts + `,"status":1}`, "status"},
		{"status-escapes", `{"timestamp":` + ts + `,"status":"\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u202e"}`, "unknown status"},
		{"status-long", `{"timestamp":` + ts + `,"status":"` + strings.Repeat("X", 5000) + `"}`, "unknown status"},
		{"nested", `{"timestamp":` + ts + `,"status":"RUNNING","extra":` + nested + `}`, "longer than"},
		{"nested-small", `{"timestamp":` + ts + `,"status":"RUNNING","extra":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, ""},
		{"huge", `{"timestamp":` + ts + `,"status":"RUNNING","pad":"` + strings.Repeat("a", 1<<20) + `"}`, "longer than"},
		{"bad-utf8", "{\"timestamp\":" + ts + ",\"status\":\"RUNNING\",\"pause_reason\":\"\xff\xfe\"}", ""},
		{"unknown-fields", `{"timestamp":` + ts + `,"status":"RUNNING","host":"h","version":{"a":[1,2]},"consumer_lag":null}`, ""},
	}
	for _, v := range values {
		rdb.Set(ctx, keys.Heartbeat("hand", v.inst), v.value, time.Minute)
	}
	rdb.HSet(ctx, keys.Heartbeat("hand", "a-hash"), "timestamp", "now")
	rdb.ZAdd(ctx, keys.Registry("hand"), redis.Z{Score: float64(now.Unix()), Member: "a-hash"})
	rdb.SAdd(ctx, keys.Types(), "hand")

	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix})
	rows := mustCheck(t, m)
	for _, v := range values {
		r := rowOf(t, rows, "hand", v.inst)
		switch {
		case v.want == "":
			wantRow(t, r, StatusRunning, SeverityOK, ConditionOK)
		case r.Conditions[0] != ConditionMalformed || r.Severity != SeverityWarning || !strings.Contains(r.Reason, v.want):
			t.Errorf("%s: %s %v %q, want malformed with %q", v.inst, r.Severity, r.Conditions, r.Reason, v.want)
		}
		if len(r.Reason) > 600 || len(r.Status) > MaxStatusLen+3 {
			t.Errorf("%s: reason of %d bytes, status of %d: not bounded", v.inst, len(r.Reason), len(r.Status))
		}
	}
	if r := rowOf(t, rows, "hand", "a-hash"); r.Conditions[0] != ConditionMalformed || !strings.Contains(r.Reason, "not a string") {
		t.Errorf("a hash at a heartbeat key: %+v", r)
	}
}

// TestHandWrittenRegistry: registry scores and members, the set of
// types and the shutdown marks as someone may write them by hand. The
// issue's case: ZADD workers:T 1e12 ghost made /healthz answer 500.
func TestHandWrittenRegistry(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	now := time.Now()
	rdb.SAdd(ctx, keys.Types(), "T", "\xff\xfe", strings.Repeat("t", MaxNameLen+1), "with:colon")
	rdb.ZAdd(ctx, keys.Registry("T"),
		redis.Z{Score: 1e12, Member: "ghost"},
		redis.Z{Score: float64(now.Unix()), Member: "\xff-bad-utf8"},
		redis.Z{Score: float64(now.Unix()), Member: strings.Repeat("i", MaxNameLen+1)},
		redis.Z{Score: float64(now.Unix()), Member: "\x1b]52;c;ZXZpbA==\x07"},
	)
	rdb.ZAdd(ctx, keys.Registry("T"), redis.Z{Score: 1e12, Member: "ghost-with-key"})
	rdb.Set(ctx, keys.Heartbeat("T", "ghost-with-key"), `{"timestamp":"`+now.UTC().Format(time.RFC3339Nano)+`","status":"RUNNING"}`, time.Minute)
	rdb.HSet(ctx, keys.Stopping("T"), "ghost", "not a time")
	rdb.Set(ctx, keys.Registry("wrongtype"), "a string where a sorted set goes", time.Minute)
	rdb.SAdd(ctx, keys.Types(), "wrongtype")

	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix})
	rows := mustCheck(t, m)
	ghost := rowOf(t, rows, "T", "ghost")
	if ghost.Conditions[0] != ConditionMalformed || !strings.Contains(ghost.Reason, "registry") || !ghost.LastSeen.IsZero() {
		t.Errorf("ghost with score 1e12: %+v", ghost)
	}
	wantRow(t, rowOf(t, rows, "T", "ghost-with-key"), StatusRunning, SeverityOK, ConditionOK)
	esc := rowOf(t, rows, "T", "\x1b]52;c;ZXZpbA==\x07") // kept: its name is escaped where printed
	wantRow(t, esc, StatusLate, SeverityOK, ConditionLate)
	if len(rows) != 3 {
		t.Errorf("%d rows, want ghost, ghost-with-key and the escaped name: %+v", len(rows), rows)
	}
	if d := m.Dropped(); d.BadNames != 6 || d.OverLimit != 0 {
		t.Errorf("Dropped = %+v, want 6 bad names (3 types, 2 members, a registry that is no sorted set)", d)
	}
	// The ghost is retired like any vanished instance.
	if _, err := Retire(ctx, rdb, keys, "T", "ghost", "ops", "ghost written by hand"); err != nil {
		t.Fatalf("Retire the ghost: %v", err)
	}
	// A set of types that is not a set: no types, no crash.
	rdb.Del(ctx, keys.Types())
	rdb.Set(ctx, keys.Types(), "not a set", time.Minute)
	if _, err := m.Check(ctx); err != nil {
		t.Errorf("Check with a string as the set of types: %v", err)
	}
}

// TestMaxInstances: 100 instances written by hand (half registered, half
// by their key alone) under a limit of 30: the configured type's ten are
// always read, the rest is cut and counted.
func TestMaxInstances(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	now := time.Now().UTC()
	v := `{"timestamp":"` + now.Format(time.RFC3339Nano) + `","status":"RUNNING"}`
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := range 90 {
			typ, inst := "fake-"+strconv.Itoa(i%9), "i"+strconv.Itoa(i)
			pipe.Set(ctx, keys.Heartbeat(typ, inst), v, time.Minute)
			if i%2 == 0 {
				pipe.ZAdd(ctx, keys.Registry(typ), redis.Z{Score: unixSeconds(now), Member: inst})
				pipe.SAdd(ctx, keys.Types(), typ)
			}
		}
		for i := range 10 {
			pipe.Set(ctx, keys.Heartbeat("zz-configured", "c"+strconv.Itoa(i)), v, time.Minute)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, MaxInstances: 30, Workers: []string{"zz-configured"}})
	rows := mustCheck(t, m)
	if len(rows) != 30 {
		t.Fatalf("%d rows, want 30", len(rows))
	}
	n := 0
	for _, r := range rows {
		if r.Type == "zz-configured" {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d rows of the configured type, want all 10", n)
	}
	if d := m.Dropped(); d.OverLimit != 70 || d.Limit != 30 {
		t.Errorf("Dropped = %+v, want 70 over the limit of 30", d)
	}
}

// TestPrefixIsolates: a monitor sees only the keys under its prefix,
// though another application's look alike.
func TestPrefixIsolates(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	v := `{"timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","status":"RUNNING"}`
	rdb.Set(ctx, prefix+"ours:worker:w:1", v, time.Minute)
	rdb.Set(ctx, prefix+"theirs:worker:w:2", v, time.Minute)
	rdb.Set(ctx, prefix+"ours*:worker:w:3", v, time.Minute) // a glob character in the prefix is no glob
	rows := mustCheck(t, newMonitor(t, rdb, MonitorConfig{Prefix: prefix + "ours:"}))
	if len(rows) != 1 || rows[0].Instance != "1" {
		t.Errorf("rows under %q: %+v", prefix+"ours:", rows)
	}
	rows = mustCheck(t, newMonitor(t, rdb, MonitorConfig{Prefix: prefix + "ours*:"}))
	if len(rows) != 1 || rows[0].Instance != "3" {
		t.Errorf("rows under %q: %+v", prefix+"ours*:", rows)
	}
}

// TestDiscoveryBudget: with the smallest budget (one SCAN per check) a
// pass over the shared Redis spans checks, goes on where the last one
// stopped, and each key-only instance it finds is recorded, so that it
// stays in the table at every later check.
func TestDiscoveryBudget(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	v := `{"timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","status":"RUNNING"}`
	for i := range 5 {
		rdb.Set(ctx, keys.Heartbeat("budget", strconv.Itoa(i)), v, time.Minute)
	}
	m := newMonitor(t, rdb, MonitorConfig{Prefix: prefix, ScanKeysPerCheck: 1})
	seen := 0
	for checks := 1; seen < 5; checks++ {
		rows := mustCheck(t, m)
		if len(rows) < seen {
			t.Fatalf("check %d: %d rows, fewer than the %d seen before: a recorded instance was lost", checks, len(rows), seen)
		}
		seen = len(rows)
		if checks > 10_000 {
			t.Fatalf("after %d checks only %d of 5 instances found: the pass does not go on", checks, seen)
		}
	}
	if n, _ := rdb.ZCard(ctx, keys.Discovered("budget")).Result(); n != 5 {
		t.Errorf("%d instances recorded, want 5", n)
	}
}
