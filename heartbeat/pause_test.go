package heartbeat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPauses: a pause of a known worker type is stored without expiry,
// read back, audited, replaced by a second pause and lifted by Resume; an
// unknown type, a bad reason and a resume of a running worker are refused.
func TestPauses(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	ps := Pauses{RDB: rdb, Keys: keys}
	if err := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "a", Prefix: prefix}).Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Pause(ctx, "payuot", "alice", "typo"); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("Pause(unknown type) = %v, want ErrUnknownType", err)
	}
	for _, bad := range []string{"", "  ", strings.Repeat("x", MaxPauseReasonLen+1), "line\nbreak", "\xff"} {
		if _, err := ps.Pause(ctx, "payout", "alice", bad); !errors.Is(err, ErrBadReason) {
			t.Fatalf("Pause(reason %q) = %v, want ErrBadReason", bad, err)
		}
	}
	for _, bad := range []string{"", " ", " alice", "\x1b]52;c;ZXZpbA==\x07", "al\u202eice", "\xff", strings.Repeat("a", MaxActorLen+1)} {
		if _, err := ps.Pause(ctx, "payout", bad, "maintenance"); !errors.Is(err, ErrBadActor) {
			t.Fatalf("Pause(actor %q) = %v, want ErrBadActor", bad, err)
		}
		if _, err := ps.Resume(ctx, "payout", bad); !errors.Is(err, ErrBadActor) {
			t.Fatalf("Resume(actor %q) = %v, want ErrBadActor", bad, err)
		}
		if _, err := Retire(ctx, rdb, keys, "payout", "a", bad, "gone"); !errors.Is(err, ErrBadActor) {
			t.Fatalf("Retire(actor %q) = %v, want ErrBadActor", bad, err)
		}
	}
	if _, err := ps.Resume(ctx, "payout", "alice"); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("Resume(not paused) = %v, want ErrNotPaused", err)
	}
	if _, ok, err := ps.Get(ctx, "payout"); err != nil || ok {
		t.Fatalf("Get before pausing = %v, %v", ok, err)
	}
	if _, err := ps.Pause(ctx, "payout", "alice", "bank API maintenance"); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Pause(ctx, "payout", "bob", "bank API maintenance, extended"); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ps.Get(ctx, "payout")
	if err != nil || !ok || got.Actor != "bob" || got.Reason != "bank API maintenance, extended" || time.Since(got.At) > time.Minute {
		t.Fatalf("Get = %+v, %v, %v", got, ok, err)
	}
	if ttl := rdb.TTL(ctx, keys.Paused("payout")).Val(); ttl != -1 {
		t.Fatalf("pause key TTL %s, want none (it outlives restarts)", ttl)
	}
	lifted, err := ps.Resume(ctx, "payout", "carol")
	if err != nil || lifted.Actor != "bob" {
		t.Fatalf("Resume = %+v, %v", lifted, err)
	}
	if _, ok, _ := ps.Get(ctx, "payout"); ok {
		t.Fatal("still paused after Resume")
	}
	msgs := rdb.XRange(ctx, keys.Audit(), "-", "+").Val()
	var actions []string
	for _, m := range msgs {
		actions = append(actions, m.Values["action"].(string)+":"+m.Values["actor"].(string))
	}
	if want := "pause:alice pause:bob resume:carol"; strings.Join(actions, " ") != want {
		t.Fatalf("audit %q, want %q", actions, want)
	}
	// The audit stream holds pauses now: Retirements skips them.
	if rs, err := Retirements(ctx, rdb, keys, 10); err != nil || len(rs) != 0 {
		t.Fatalf("Retirements = %+v, %v; want none", rs, err)
	}
}

// TestPausedBeat: a publisher told SetPaused beats PAUSED with who, why
// and the next probe, the monitor reports it paused, and SetRunning
// brings RUNNING back.
func TestPausedBeat(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	p := newPublisher(t, rdb, PublisherConfig{Type: "payout", Instance: "a", Prefix: prefix})
	probe := time.Now().Add(30 * time.Second).Truncate(time.Millisecond)
	p.SetPaused(PausedByKillSwitch, "20 of 20 calls failed", probe)
	if err := p.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	hb, err := decodeHeartbeat(rdb.Get(ctx, p.Key()).Val(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if hb.Status != StatusPaused || hb.PausedBy != PausedByKillSwitch || hb.PauseReason != "20 of 20 calls failed" || !hb.NextProbeAt.Equal(probe) {
		t.Fatalf("paused beat = %+v", hb)
	}
	m, err := NewMonitor(rdb, MonitorConfig{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := m.Check(ctx)
	if err != nil || len(rows) != 1 || rows[0].Status != StatusPaused || rows[0].Conditions[0] != ConditionPaused ||
		!strings.Contains(rows[0].Reason, "kill_switch: 20 of 20 calls failed; next probe in") {
		t.Fatalf("Check = %+v, %v", rows, err)
	}
	p.SetRunning()
	if err := p.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if hb, _ := decodeHeartbeat(rdb.Get(ctx, p.Key()).Val(), time.Now()); hb.Status != StatusRunning || hb.PausedBy != "" {
		t.Fatalf("beat after SetRunning = %+v", hb)
	}
}

// TestPauseReadAsWritten: a pause hash written by hand (a huge reason,
// escapes, a time that is no time, extra fields, no fields the worker
// knows, the wrong type) reads as a pause, bounded, never an error.
func TestPauseReadAsWritten(t *testing.T) {
	t.Parallel()
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	keys := Keys{Prefix: prefix}
	ps := Pauses{RDB: rdb, Keys: keys}
	rdb.HSet(ctx, keys.Paused("a"), "actor", strings.Repeat("x", 1<<20), "reason", "\x1b[2J"+strings.Repeat("r", 1<<20), "at", "1e300", "junk", "y")
	rdb.HSet(ctx, keys.Paused("b"), "junk", "y")
	rdb.Set(ctx, keys.Paused("c"), "a string", time.Minute)
	for _, typ := range []string{"a", "b", "c"} {
		pa, ok, err := ps.Get(ctx, typ)
		if err != nil || !ok {
			t.Fatalf("Get(%s) = %v, %v, want a pause", typ, ok, err)
		}
		if len(pa.Actor) > MaxActorLen+3 || len(pa.Reason) > MaxPauseReasonLen+3 || !pa.At.IsZero() {
			t.Errorf("Get(%s) = actor of %d bytes, reason of %d, at %s: not bounded", typ, len(pa.Actor), len(pa.Reason), pa.At)
		}
	}
}
