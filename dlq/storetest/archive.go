package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

func testArchive(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	now := time.Now()
	old, young := now.Add(-2*time.Hour), now.Add(-time.Minute)
	recs := fill(t, s, "arch.dlq", "a", 6, func(i int, r *dlq.Record) {
		r.ReceivedAt = old.Add(time.Duration(i) * time.Second)
		if i == 5 {
			r.ReceivedAt = young
		}
	})
	// recs[1] discarded, recs[2] replaying (in flight: never archived).
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "arch.dlq", ID: recs[1].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "t", Action: dlq.ActionDiscard, Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	crash(t, s, recs[2], "t", now)

	// Store.Archive honours its limit.
	n, err := s.Archive(ctx, "arch.dlq", now.Add(-time.Hour), 1)
	if err != nil || n != 1 {
		t.Fatalf("Archive(limit 1) = %d, %v; want 1", n, err)
	}
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))
	moved, err := ops.Archive(ctx, "arch.dlq", time.Hour)
	if err != nil || moved != 3 {
		t.Fatalf("Ops.Archive = %d, %v; want 3 more (recs 1, 3, 4)", moved, err)
	}
	archived := listAll(t, s, dlq.Query{DLQ: "arch.dlq", Status: dlq.StatusArchived})
	if want := []string{"a-0", "a-1", "a-3", "a-4"}; !slices.Equal(ids(archived), want) {
		t.Errorf("archived = %v, want %v", ids(archived), want)
	}
	for _, r := range archived {
		if r.Status != dlq.StatusArchived || r.StatusBy != dlq.ArchiverActor {
			t.Errorf("archived record %s is %s by %q", r.Identity, r.Status, r.StatusBy)
		}
	}
	live := listAll(t, s, dlq.Query{DLQ: "arch.dlq"})
	if want := []string{"a-2", "a-5"}; !slices.Equal(ids(live), want) {
		t.Errorf("live = %v, want %v", ids(live), want)
	}
	// Archived records stay readable, byte for byte, with their trail.
	got := get(t, s, "arch.dlq", recs[1].ID)
	if got.Status != dlq.StatusArchived {
		t.Errorf("Get(archived) status = %s", got.Status)
	}
	checkEntry(t, got.Entry, recs[1].Entry)
	if a := auditActions(t, s, "arch.dlq", recs[1].ID); !slices.Equal(a, []string{dlq.ActionDiscard}) {
		t.Errorf("audit of an archived entry = %v", a)
	}
	// Not replayable nor discardable, and a redelivery is still no new row.
	if _, err := ops.Replay(ctx, "arch.dlq", recs[0].ID, "bob"); !errors.Is(err, dlq.ErrNotPending) {
		t.Errorf("Replay(archived) = %v, want ErrNotPending", err)
	}
	if _, err := ops.Discard(ctx, "arch.dlq", recs[0].ID, "bob", "x"); !errors.Is(err, dlq.ErrNotPending) {
		t.Errorf("Discard(archived) = %v, want ErrNotPending", err)
	}
	again, inserted, err := s.Insert(ctx, record("arch.dlq", "a-0", 0))
	if err != nil || inserted || again.ID != recs[0].ID || again.Status != dlq.StatusArchived {
		t.Errorf("re-Insert of an archived identity = %s %s, inserted %v, %v; want the archived record", again.ID, again.Status, inserted, err)
	}
	clash := record("arch.dlq", "new-identity", 0)
	clash.ID = recs[0].ID
	if _, _, err := s.Insert(ctx, clash); !errors.Is(err, dlq.ErrIDConflict) {
		t.Errorf("Insert with an archived id = %v, want ErrIDConflict", err)
	}
	sums, err := s.Summaries(ctx)
	if err != nil || len(sums) != 1 || sums[0].Archived != 4 || sums[0].Replaying != 1 || sums[0].Pending != 1 {
		t.Errorf("Summaries = %+v, %v; want 4 archived, 1 replaying, 1 pending", sums, err)
	}
	// Listing every status but archived, and counting.
	if n, _ := s.Count(ctx, dlq.Query{DLQ: "arch.dlq", Status: dlq.StatusArchived}); n != 4 {
		t.Errorf("Count(archived) = %d, want 4", n)
	}
	// Nothing more to archive.
	if n, err := ops.Archive(ctx, "arch.dlq", time.Hour); err != nil || n != 0 {
		t.Errorf("second Archive = %d, %v; want 0", n, err)
	}
}

func testArchiveExpired(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-48 * time.Hour)
	ancient := now.Add(-40 * 24 * time.Hour)
	mk := func(name string, sev string) {
		fill(t, s, name, "x", 3, func(i int, r *dlq.Record) {
			r.Severity = sev
			switch i {
			case 0:
				r.ReceivedAt = ancient
			case 1:
				r.ReceivedAt = old
			default:
				r.ReceivedAt = now
			}
		})
	}
	mk("day.dlq", string(broker.SeverityWarning))           // retention 24h: 2 archived
	mk("crit.dlq", string(broker.SeverityWarning))          // critical by policy: none
	mk("crit-records.dlq", string(broker.SeverityCritical)) // critical by its records: none
	mk("forever.dlq", string(broker.SeverityInfo))          // kept forever: none
	mk("default.dlq", string(broker.SeverityWarning))       // 30 days: the ancient one
	cfg := opsConfig(s, &publisher{})
	cfg.Policies = map[string]dlq.Policy{
		"day.dlq":     {Retention: 24 * time.Hour},
		"crit.dlq":    {Severity: broker.SeverityCritical, Retention: time.Hour},
		"forever.dlq": {Severity: broker.SeverityInfo, Retention: broker.Forever},
		"empty.dlq":   {Retention: time.Hour},
	}
	ops := newOps(t, cfg)
	moved, err := ops.ArchiveExpired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"day.dlq": 2, "default.dlq": 1}
	if len(moved) != len(want) || moved["day.dlq"] != 2 || moved["default.dlq"] != 1 {
		t.Errorf("ArchiveExpired moved %v, want %v", moved, want)
	}
	for name, n := range map[string]int64{"day.dlq": 1, "crit.dlq": 3, "crit-records.dlq": 3, "forever.dlq": 3, "default.dlq": 2} {
		if got, err := s.Count(ctx, dlq.Query{DLQ: name}); err != nil || got != n {
			t.Errorf("%s keeps %d live records (%v), want %d", name, got, err, n)
		}
	}
	// The DLQ list shows configured DLQs without records, and policies.
	infos, err := ops.DLQs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]operate.DLQInfo{}
	for _, in := range infos {
		byName[in.DLQ] = in
	}
	if len(infos) != 6 {
		t.Errorf("DLQs = %d entries, want 6", len(infos))
	}
	if in := byName["empty.dlq"]; !in.Configured || in.Pending != 0 || in.Retention != time.Hour {
		t.Errorf("empty.dlq = %+v", in)
	}
	if in := byName["crit.dlq"]; in.Severity != string(broker.SeverityCritical) || in.Pending != 3 {
		t.Errorf("crit.dlq = %+v, want critical (the policy wins) with 3 pending", in)
	}
	if in := byName["day.dlq"]; in.Archived != 2 || in.Pending != 1 {
		t.Errorf("day.dlq = %+v, want 2 archived, 1 pending", in)
	}
	if in := byName["default.dlq"]; in.Configured || in.Retention != dlq.DefaultRetention {
		t.Errorf("default.dlq = %+v, want unconfigured with the default retention", in)
	}
	if in := byName["forever.dlq"]; in.Retention != broker.Forever {
		t.Errorf("forever.dlq retention = %v", in.Retention)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{"empty.dlq", true}, {"day.dlq", true}, {"nothing.dlq", false}} {
		if got, err := ops.Known(ctx, tc.name); err != nil || got != tc.want {
			t.Errorf("Known(%s) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func testMetrics(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	recs := fill(t, s, "m.dlq", "m", 3, nil)
	fill(t, s, "m2.dlq", "n", 2, nil)
	reg := prometheus.NewRegistry()
	cfg := opsConfig(s, &publisher{})
	cfg.Registerer = reg
	cfg.Policies = map[string]dlq.Policy{"m3.dlq": {Severity: broker.SeverityCritical}}
	ops := newOps(t, cfg)
	if _, err := ops.Replay(ctx, "m.dlq", recs[0].ID, "a"); err != nil {
		t.Fatal(err)
	}
	if v, ok := gather(t, reg, operate.MetricReplayed, "m.dlq"); !ok || v != 1 {
		t.Errorf("%s{dlq=m.dlq} = %v (%v), want 1", operate.MetricReplayed, v, ok)
	}
	if err := ops.RefreshMetrics(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"m.dlq": 2, "m2.dlq": 2, "m3.dlq": 0} {
		if v, ok := gather(t, reg, operate.MetricPending, name); !ok || v != want {
			t.Errorf("%s{dlq=%s} = %v (%v), want %v", operate.MetricPending, name, v, ok, want)
		}
	}
	// The severity rides on the series: an unresolved critical dead letter
	// is selectable without a join (alert DLQFinancial).
	for name, want := range map[string]string{"m.dlq": string(broker.SeverityWarning), "m3.dlq": string(broker.SeverityCritical)} {
		if got := label(t, reg, operate.MetricPending, name, "severity"); got != want {
			t.Errorf("%s{dlq=%s} severity = %q, want %q", operate.MetricPending, name, got, want)
		}
	}
	// Registering twice on one registry is an error, not a panic.
	if _, err := operate.New(cfg); err == nil {
		t.Error("operate.New registered its metrics twice")
	}
}
