package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// bigValue is n bytes that show any shift or cut.
func bigValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i*7 + i>>9)
	}
	return v
}

// testBriefReads: listings and status changes never carry a record's
// message, only its size; Get and GetMany carry it whole; a listed error
// message is cut, a read one is whole.
func testBriefReads(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	long := strings.Repeat("é", dlq.ListedErrorLen+10)
	recs := fill(t, s, "brief.dlq", "b", 4, func(i int, r *dlq.Record) {
		switch i {
		case 0:
			r.Entry.OriginalValue = bigValue(300 << 10)
			r.Entry.ErrorMessage = long
		case 1:
			r.Entry.OriginalValue = nil
		case 2:
			r.Entry.OriginalValue = []byte{}
		}
	})
	want := make([]dlq.Entry, len(recs))
	for i, r := range recs {
		want[i] = r.Entry
		if r.ValueSize != int64(len(r.Entry.OriginalValue)) {
			t.Errorf("Insert returned ValueSize %d for %d bytes", r.ValueSize, len(r.Entry.OriginalValue))
		}
	}
	listedWant := func(i int) dlq.Entry {
		e := want[i]
		if i == 0 {
			e.ErrorMessage = strings.Repeat("é", dlq.ListedErrorLen)
		}
		return e
	}
	for _, q := range []dlq.Query{{DLQ: "brief.dlq"}, {DLQ: "brief.dlq", NewestFirst: true, Limit: 2}} {
		for _, r := range listAll(t, s, q) {
			i := indexOf(recs, r.ID)
			checkBrief(t, r, listedWant(i))
		}
	}
	got, err := s.Transition(ctx, dlq.Transition{DLQ: "brief.dlq", ID: recs[0].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying, Actor: "a"})
	if err != nil {
		t.Fatal(err)
	}
	checkBrief(t, got, listedWant(0))
	// A refused transition returns the current record, brief too.
	cur, err := s.Transition(ctx, dlq.Transition{DLQ: "brief.dlq", ID: recs[0].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "a"})
	if !errors.Is(err, dlq.ErrNotPending) {
		t.Fatalf("Transition from the wrong status = %v", err)
	}
	checkBrief(t, cur, listedWant(0))

	// Get: whole, error message included.
	full := get(t, s, "brief.dlq", recs[0].ID)
	if full.Brief || full.ValueSize != 300<<10 {
		t.Errorf("Get: Brief %v, ValueSize %d", full.Brief, full.ValueSize)
	}
	checkEntry(t, full.Entry, want[0])

	// GetMany: in the order asked, unknown ids left out, archived ones too.
	if n, err := s.Archive(ctx, "brief.dlq", base.Add(4*time.Second), 1); err != nil || n != 1 { // recs[1] (recs[0] is replaying)
		t.Fatalf("Archive = %d, %v", n, err)
	}
	many, err := s.GetMany(ctx, "brief.dlq", []string{recs[3].ID, "nope", recs[1].ID, recs[0].ID})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(many) != 3 || many[0].ID != recs[3].ID || many[1].ID != recs[1].ID || many[2].ID != recs[0].ID {
		t.Fatalf("GetMany returned %v, want [%s %s %s]", ids(many), recs[3].ID, recs[1].ID, recs[0].ID)
	}
	if many[1].Status != dlq.StatusArchived {
		t.Errorf("GetMany of an archived entry: status %s", many[1].Status)
	}
	for i, j := range []int{3, 1, 0} {
		if many[i].Brief {
			t.Errorf("GetMany returned a brief record")
		}
		checkEntry(t, many[i].Entry, want[j])
	}
	if none, err := s.GetMany(ctx, "brief.dlq", nil); err != nil || len(none) != 0 {
		t.Errorf("GetMany() = %v, %v", none, err)
	}
	if none, err := s.GetMany(ctx, "other.dlq", []string{recs[0].ID}); err != nil || len(none) != 0 {
		t.Errorf("GetMany of another DLQ's ids = %v, %v", ids(none), err)
	}

	// Preview: the value cut, its size whole; nil stays nil.
	for _, c := range []struct {
		i, limit int
		value    []byte
	}{
		{0, 1000, want[0].OriginalValue[:1000]},
		{0, 0, []byte{}},
		{0, 1 << 20, want[0].OriginalValue},
		{1, 10, nil},      // archived, nil value
		{2, 10, []byte{}}, // empty value
		{3, 5, want[3].OriginalValue[:5]},
	} {
		p, err := s.Preview(ctx, "brief.dlq", recs[c.i].ID, c.limit)
		if err != nil {
			t.Fatalf("Preview(%d, %d): %v", c.i, c.limit, err)
		}
		if p.ValueSize != int64(len(want[c.i].OriginalValue)) || p.Brief {
			t.Errorf("Preview(%d, %d): ValueSize %d, Brief %v", c.i, c.limit, p.ValueSize, p.Brief)
		}
		e := want[c.i]
		e.OriginalValue = c.value
		checkEntry(t, p.Entry, e)
	}
	if _, err := s.Preview(ctx, "brief.dlq", "nope", 10); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Preview(unknown) = %v, want ErrNotFound", err)
	}
}

func indexOf(recs []dlq.Record, id string) int {
	for i, r := range recs {
		if r.ID == id {
			return i
		}
	}
	panic("no record " + id)
}

// testReadValue: a payload read in chunks is the payload, live or archived.
func testReadValue(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	v := bigValue(1<<20 + 123)
	recs := fill(t, s, "val.dlq", "v", 2, func(i int, r *dlq.Record) {
		if i == 0 {
			r.Entry.OriginalValue = v
		} else {
			r.Entry.OriginalValue = nil
		}
	})
	read := func(id string, chunk int) []byte {
		var out []byte
		for off := int64(0); ; {
			b, err := s.ReadValue(ctx, "val.dlq", id, off, chunk)
			if err != nil {
				t.Fatalf("ReadValue(%d, %d): %v", off, chunk, err)
			}
			if len(b) > chunk {
				t.Fatalf("ReadValue(%d, %d) returned %d bytes", off, chunk, len(b))
			}
			if len(b) == 0 {
				return out
			}
			out = append(out, b...)
			off += int64(len(b))
		}
	}
	for _, chunk := range []int{1 << 20, 100_000, 7} {
		if chunk == 7 {
			if got, err := s.ReadValue(ctx, "val.dlq", recs[0].ID, 1<<20+120, 7); err != nil || !bytes.Equal(got, v[1<<20+120:]) {
				t.Errorf("ReadValue of the last bytes = %v, %v", got, err)
			}
			continue
		}
		if got := read(recs[0].ID, chunk); !bytes.Equal(got, v) {
			t.Errorf("chunks of %d: %d bytes read back differ from the %d stored", chunk, len(got), len(v))
		}
	}
	if b, err := s.ReadValue(ctx, "val.dlq", recs[0].ID, 5<<20, 10); err != nil || len(b) != 0 {
		t.Errorf("ReadValue past the end = %d bytes, %v", len(b), err)
	}
	if b, err := s.ReadValue(ctx, "val.dlq", recs[1].ID, 0, 10); err != nil || b != nil {
		t.Errorf("ReadValue of a nil value = %q, %v; want nil", b, err)
	}
	if _, err := s.ReadValue(ctx, "val.dlq", "nope", 0, 10); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("ReadValue(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.ReadValue(ctx, "val.dlq", recs[0].ID, -1, 10); err == nil {
		t.Error("ReadValue at a negative offset succeeded")
	}
	if n, err := s.Archive(ctx, "val.dlq", base.Add(time.Hour), 10); err != nil || n != 2 {
		t.Fatalf("Archive = %d, %v", n, err)
	}
	if got := read(recs[0].ID, 300_000); !bytes.Equal(got, v) {
		t.Errorf("archived: %d bytes read back differ from the %d stored", len(got), len(v))
	}
}

// testShowAndPayload: Show loads at most the preview of a payload, Payload
// writes all of it.
func testShowAndPayload(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	v := bigValue(3<<20 + 5)
	recs := fill(t, s, "show.dlq", "s", 2, func(i int, r *dlq.Record) {
		if i == 0 {
			r.Entry.OriginalValue = v
		} else {
			r.Entry.OriginalValue = nil
		}
	})
	cfg := opsConfig(s, nil)
	cfg.MaxPayloadPreview = 4096
	ops := newOps(t, cfg)
	if ops.PayloadPreview() != 4096 {
		t.Errorf("PayloadPreview = %d", ops.PayloadPreview())
	}
	r, _, err := ops.Show(ctx, "show.dlq", recs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Entry.OriginalValue, v[:4096]) || r.ValueSize != int64(len(v)) {
		t.Errorf("Show: %d bytes of value, size %d; want the first 4096 of %d", len(r.Entry.OriginalValue), r.ValueSize, len(v))
	}
	for i, want := range [][]byte{v, nil} {
		var buf bytes.Buffer
		var size int64 = -1
		var isNil bool
		err := ops.Payload(ctx, "show.dlq", recs[i].ID, func(n int64, null bool) { size, isNil = n, null }, &buf)
		if err != nil {
			t.Fatalf("Payload: %v", err)
		}
		if !bytes.Equal(buf.Bytes(), want) || size != int64(len(want)) || isNil != (want == nil) {
			t.Errorf("Payload of %d: %d bytes (size %d, nil %v), want %d", i, buf.Len(), size, isNil, len(want))
		}
	}
	started := false
	if err := ops.Payload(ctx, "show.dlq", "nope", func(int64, bool) { started = true }, &bytes.Buffer{}); !errors.Is(err, dlq.ErrNotFound) || started {
		t.Errorf("Payload(unknown) = %v (started %v), want ErrNotFound before starting", err, started)
	}
	if d := newOps(t, opsConfig(s, nil)); d.PayloadPreview() != operate.DefaultPayloadPreview {
		t.Errorf("default preview = %d, want %d", d.PayloadPreview(), operate.DefaultPayloadPreview)
	}
}

// testReplayRoutes: a replay goes to its DLQ's route; an entry whose
// recorded origin disagrees is refused and left alone, and replay-all
// skips and counts it.
func testReplayRoutes(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	recs := fill(t, s, "mis.dlq", "m", 5, func(i int, r *dlq.Record) {
		switch i {
		case 1:
			r.Entry.Worker = "payouts" // another worker
		case 2:
			r.Entry.Source = "orders.payouts" // another worker's queue
		case 3:
			r.Entry.OriginalTopic = "payments" // another topic
		}
	})
	unrouted := fill(t, s, "norote.dlq", "n", 1, nil)[0]
	pub := &publisher{}
	ops := newOps(t, opsConfig(s, pub))

	got, err := ops.Replay(ctx, "mis.dlq", recs[0].ID, "alice")
	if err != nil || got.Status != dlq.StatusReplayed {
		t.Fatalf("Replay of a routed entry = %s, %v", got.Status, err)
	}
	if calls := pub.published(); len(calls) != 1 || calls[0].to.Target != "orders.billing" || calls[0].to.DLQ != "mis.dlq" {
		t.Fatalf("republished %+v, want one call to orders.billing", calls)
	}
	for i, claim := range map[int]string{1: `worker "payouts"`, 2: `source "orders.payouts"`, 3: `topic "payments"`} {
		r := recs[i]
		_, err := ops.Replay(ctx, "mis.dlq", r.ID, "alice")
		if !errors.Is(err, dlq.ErrOriginMismatch) {
			t.Errorf("Replay of entry %d = %v, want ErrOriginMismatch", i, err)
			continue
		}
		for _, want := range []string{claim, `"orders.billing"`, `"mis.dlq"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal of entry %d does not name %s: %v", i, want, err)
			}
		}
		if m := ops.Mismatch(r); !strings.Contains(m, "origin mismatch") {
			t.Errorf("Mismatch(entry %d) = %q", i, m)
		}
		if back := get(t, s, "mis.dlq", r.ID); back.Status != dlq.StatusPending || back.Version != 1 {
			t.Errorf("refused entry %d is %s v%d, want pending v1", i, back.Status, back.Version)
		}
		if a := auditActions(t, s, "mis.dlq", r.ID); len(a) != 0 {
			t.Errorf("refused entry %d has audit rows %v", i, a)
		}
	}
	if m := ops.Mismatch(recs[4]); m != "" {
		t.Errorf("Mismatch of a routed entry = %q", m)
	}
	if rt, err := ops.Target(recs[4]); err != nil || rt.Target != "orders.billing" || rt.Worker != "billing" {
		t.Errorf("Target = %+v, %v", rt, err)
	}
	if _, err := ops.Replay(ctx, "norote.dlq", unrouted.ID, "alice"); !errors.Is(err, operate.ErrNoRoute) {
		t.Errorf("Replay in a DLQ without route = %v, want ErrNoRoute", err)
	}

	// Replay-all: the routed one replayed, three counted and left pending.
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "mis.dlq"}, operate.ReplayAllOptions{Actor: "bob", PageSize: 2})
	if err != nil {
		t.Fatalf("ReplayAll: %v", err)
	}
	if want := (operate.Progress{Total: 4, Replayed: 1, Mismatched: 3, Done: true}); p != want {
		t.Errorf("progress = %+v, want %+v", p, want)
	}
	if n, _ := s.Count(ctx, dlq.Query{DLQ: "mis.dlq", Status: dlq.StatusPending}); n != 3 {
		t.Errorf("%d entries pending after replay-all, want the 3 refused", n)
	}
	if calls := pub.published(); len(calls) != 2 || calls[1].from != "mis.dlq/"+recs[4].ID {
		t.Errorf("republished %d times, want 2 (the last %s)", len(calls), recs[4].ID)
	}

	// A shared DLQ (Kafka): the entry must name one of its workers.
	cfg := opsConfig(s, pub)
	cfg.Routes = append(cfg.Routes,
		dlq.Route{DLQ: "shared.dlq", Topic: "orders", Worker: "billing", Target: "orders.retry.billing", Sources: []string{"orders", "orders.retry.billing"}},
		dlq.Route{DLQ: "shared.dlq", Topic: "orders", Worker: "audit", Target: "orders.retry.audit", Sources: []string{"orders", "orders.retry.audit"}})
	shared := newOps(t, cfg)
	sh := fill(t, s, "shared.dlq", "s", 2, func(i int, r *dlq.Record) {
		r.Broker = offsetBackend
		r.Entry.Source = "orders"
		if i == 1 {
			r.Entry.Worker = ""
		}
	})
	if rt, err := shared.Target(sh[0]); err != nil || rt.Target != "orders.retry.billing" {
		t.Errorf("Target in a shared DLQ = %+v, %v", rt, err)
	}
	if _, err := shared.Target(sh[1]); !errors.Is(err, dlq.ErrOriginMismatch) || !strings.Contains(err.Error(), "names no worker") {
		t.Errorf("Target of an entry naming no worker in a shared DLQ = %v", err)
	}

	// Routes are checked.
	for _, bad := range []dlq.Route{{DLQ: "x.dlq", Topic: "x", Worker: "w"}, {Topic: "x", Worker: "w", Target: "x.w"}} {
		cfg := opsConfig(s, pub)
		cfg.Routes = append(cfg.Routes, bad)
		if _, err := operate.New(cfg); err == nil {
			t.Errorf("operate.New accepted route %+v", bad)
		}
	}
	cfg = opsConfig(s, pub)
	cfg.Routes = append(cfg.Routes, route("mis.dlq"))
	if _, err := operate.New(cfg); err == nil {
		t.Error("operate.New accepted a worker's route twice")
	}
}

// sizedStore records the payload bytes of every GetMany.
type sizedStore struct {
	dlq.Store
	mu    sync.Mutex
	calls []int64
}

func (s *sizedStore) GetMany(ctx context.Context, dlqName string, ids []string) ([]dlq.Record, error) {
	recs, err := s.Store.GetMany(ctx, dlqName, ids)
	var n int64
	for _, r := range recs {
		n += int64(len(r.Entry.OriginalValue))
	}
	s.mu.Lock()
	s.calls = append(s.calls, n)
	s.mu.Unlock()
	return recs, err
}

// testReplayAllBatchBytes: replay-all reads payloads in batches bounded by
// bytes, and replays each byte for byte.
func testReplayAllBatchBytes(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	const mib = 1 << 20
	sizes := []int{mib, mib, 3 * mib, 10, mib, mib, mib}
	recs := fill(t, s, "batch.dlq", "b", len(sizes), func(i int, r *dlq.Record) {
		r.Entry.OriginalValue = bigValue(sizes[i])
		r.Entry.OriginalValue[0] = byte(i)
	})
	ss := &sizedStore{Store: s}
	pub := &publisher{}
	ops := newOps(t, opsConfig(ss, pub))
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "batch.dlq"}, operate.ReplayAllOptions{Actor: "a", BatchBytes: 2*mib + 100})
	if err != nil || p.Replayed != int64(len(sizes)) {
		t.Fatalf("ReplayAll = %+v, %v", p, err)
	}
	// Batches: [1 1] [3] [10 B, 1, 1] [1]: at most the bound, or one entry.
	want := []int64{2 * mib, 3 * mib, 2*mib + 10, mib}
	if len(ss.calls) != len(want) {
		t.Fatalf("GetMany read %v bytes, want batches %v", ss.calls, want)
	}
	for i := range want {
		if ss.calls[i] != want[i] {
			t.Errorf("GetMany read %v bytes, want batches %v", ss.calls, want)
			break
		}
	}
	calls := pub.published()
	for i, r := range recs {
		if calls[i].from != "batch.dlq/"+r.ID || !bytes.Equal(calls[i].entry.OriginalValue, r.Entry.OriginalValue) {
			t.Errorf("replay %d: %s with %d bytes, want %s byte for byte", i, calls[i].from, len(calls[i].entry.OriginalValue), r.ID)
		}
	}
}

// testReconcileWithoutRoute: an interrupted replay whose route disagrees
// now (the configuration changed) goes back to pending, audited, and is not
// republished.
func testReconcileWithoutRoute(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	r := fill(t, s, "cr2.dlq", "c", 1, nil)[0]
	now := time.Now()
	crash(t, s, r, "alice", now.Add(-time.Hour))
	pub := &publisher{}
	cfg := opsConfig(s, pub) // no route for cr2.dlq
	cfg.Now = func() time.Time { return now }
	ops := newOps(t, cfg)
	if n, err := ops.Reconcile(ctx); err != nil || n != 0 {
		t.Fatalf("Reconcile = %d, %v; want 0, nil", n, err)
	}
	if len(pub.published()) != 0 {
		t.Error("an entry without route was republished")
	}
	got := get(t, s, "cr2.dlq", r.ID)
	trail, _ := s.Audit(ctx, "cr2.dlq", r.ID)
	if got.Status != dlq.StatusPending || len(trail) != 1 || trail[0].Action != dlq.ActionReplayFailed ||
		!strings.Contains(trail[0].Reason, "not the DLQ of a configured worker") {
		t.Errorf("entry is %s with audit %+v, want pending with a replay_failed row giving the reason", got.Status, trail)
	}
}
