package heartbeat

import (
	"errors"
	"testing"
	"time"
)

// TestRetire: a running instance cannot be retired; a vanished one (its
// key expired) or one stuck shutting down can, the monitor forgets it, and
// the audit stream says who retired it, when and why.
func TestRetire(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	live := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "live", Prefix: prefix})
	dead := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "dead", Prefix: prefix})
	draining := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "draining", Prefix: prefix})
	for _, p := range []*Publisher{live, dead, draining} {
		if err := p.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := draining.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, dead.Key()) // killed: its key expired

	if _, err := Retire(ctx, rdb, keys, "payout", "live", "ops", "test"); !errors.Is(err, ErrInstanceRunning) {
		t.Fatalf("Retire(live) = %v, want ErrInstanceRunning", err)
	}
	if _, err := Retire(ctx, rdb, keys, "payout", "nobody", "ops", "test"); !errors.Is(err, ErrNoInstance) {
		t.Fatalf("Retire(nobody) = %v, want ErrNoInstance", err)
	}
	for _, inst := range []string{"dead", "draining"} {
		r, err := Retire(ctx, rdb, keys, "payout", inst, "alice", "host decommissioned")
		if err != nil {
			t.Fatalf("Retire(%s): %v", inst, err)
		}
		if r.LastSeen.IsZero() || time.Since(r.LastSeen) > time.Minute {
			t.Errorf("Retire(%s) last seen %s, want its last beat", inst, r.LastSeen)
		}
	}
	rows, err := newMonitor(t, rdb, MonitorConfig{Prefix: prefix}).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Instance != "live" {
		t.Fatalf("after retiring, the monitor reports %+v; want only the live instance", rows)
	}
	audit, err := Retirements(ctx, rdb, keys, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 2 || audit[0].Instance != "draining" || audit[1].Instance != "dead" {
		t.Fatalf("audit = %+v, want draining then dead (newest first)", audit)
	}
	a := audit[1]
	if a.Type != "payout" || a.Actor != "alice" || a.Reason != "host decommissioned" || time.Since(a.At) > time.Minute || a.LastSeen.IsZero() {
		t.Errorf("audit record = %+v", a)
	}
}
