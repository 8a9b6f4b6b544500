package heartbeat

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// deadPid starts a process that exits at once and returns its pid, once
// it is gone.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run a short process: %v", err)
	}
	if processAlive(cmd.Process.Pid) {
		t.Fatalf("pid %d still runs after its process exited (reused?)", cmd.Process.Pid)
	}
	return cmd.Process.Pid
}

// TestSuccessorRetiresDeadPredecessors: a publisher whose instance is
// this process's hostname-pid retires, on its beat, the instances of its
// type that ran on this host under hostname-pid, whose process is gone
// and which are MISSING; audited with the successor as the actor. It
// leaves alone: a predecessor whose pid runs, one of another host, one
// not yet missing, one that was shutting down, one whose key is still
// there, and instances of other types.
func TestSuccessorRetiresDeadPredecessors(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	self := DefaultInstance()
	host := self[:len(self)-len(strconv.Itoa(os.Getpid()))]
	dead, dead2, dead3, dead4 := deadPid(t), deadPid(t), deadPid(t), deadPid(t)
	long := time.Now().Add(-5 * time.Minute)
	recent := time.Now().Add(-10 * time.Second)
	inst := func(pid int) string { return host + strconv.Itoa(pid) }
	rdb.ZAdd(ctx, keys.Registry("payout"),
		redisZ(long, inst(dead)),                       // retired
		redisZ(long, inst(os.Getppid())),               // its process runs
		redisZ(long, "other-host-"+strconv.Itoa(dead)), // another host
		redisZ(recent, inst(dead2)),                    // not missing yet
		redisZ(long, inst(dead3)),                      // was shutting down
		redisZ(long, inst(dead4)),                      // its key is still there
		redisZ(long, "pod-0"),                          // a configured identity
	)
	rdb.HSet(ctx, keys.Stopping("payout"), inst(dead3), unixString(long))
	rdb.Set(ctx, keys.Heartbeat("payout", inst(dead4)), `{"timestamp":"`+long.UTC().Format(time.RFC3339Nano)+`","status":"SHUTTING_DOWN"}`, time.Minute)
	rdb.ZAdd(ctx, keys.Registry("other-type"), redisZ(long, inst(dead)))

	p := newPublisher(t, rdb, PublisherConfig{Type: "payout", Prefix: prefix, MissingAfter: time.Minute})
	if p.Instance() != self {
		t.Fatalf("instance %q, want this process's %q", p.Instance(), self)
	}
	if err := p.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	members, err := rdb.ZRange(ctx, keys.Registry("payout"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{self: true, inst(os.Getppid()): true, "other-host-" + strconv.Itoa(dead): true,
		inst(dead2): true, inst(dead3): true, inst(dead4): true, "pod-0": true}
	if len(members) != len(want) {
		t.Errorf("registry after the beat: %v, want %d members (only %s retired)", members, len(want), inst(dead))
	}
	for _, m := range members {
		if !want[m] {
			t.Errorf("registry keeps %s", m)
		}
	}
	if n, _ := rdb.ZCard(ctx, keys.Registry("other-type")).Result(); n != 1 {
		t.Errorf("an instance of another type was retired")
	}
	audit, err := Retirements(ctx, rdb, keys, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].Instance != inst(dead) || audit[0].Actor != self || !contains(audit[0].Reason, "process "+strconv.Itoa(dead)+" is gone") {
		t.Fatalf("audit = %+v, want one retirement of %s by %s", audit, inst(dead), self)
	}

	// A configured identity (heartbeat.instance) retires nobody.
	rdb.ZAdd(ctx, keys.Registry("payout"), redisZ(long, inst(dead)))
	pod := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "pod-1", Prefix: prefix})
	if err := pod.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.ZScore(ctx, keys.Registry("payout"), inst(dead)).Result(); err == redis.Nil {
		t.Error("a publisher with a configured instance retired a predecessor")
	}
}
