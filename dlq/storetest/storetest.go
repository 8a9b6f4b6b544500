// Package storetest is the conformance suite of dlq.Store implementations:
// idempotent and concurrent inserts, paging and filters, status
// transitions with their audit rows, and the operations of operate.Ops on top
// (replay, replay-all, discard, reconcile, archive). Each store's tests run
// it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) dlq.Store { return newStore(t) })
//	}
//
// newStore must return an empty store and arrange its cleanup.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
)

// Run runs every conformance test, each on a store of its own from
// newStore. The subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) dlq.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s dlq.Store)
	}{
		{"InsertRoundTrip", testInsertRoundTrip},
		{"InsertIdempotent", testInsertIdempotent},
		{"InsertConcurrent", testInsertConcurrent},
		{"InsertIDs", testInsertIDs},
		{"InsertInvalid", testInsertInvalid},
		{"InsertAnyBackend", testInsertAnyBackend},
		{"InsertCleansText", testInsertCleansText},
		{"InsertBoundsText", testInsertBoundsText},
		{"InsertBatch", testInsertBatch},
		{"InsertBatchConcurrent", testInsertBatchConcurrent},
		{"ListPaging", testListPaging},
		{"ListFilters", testListFilters},
		{"ListInvalid", testListInvalid},
		{"Summaries", testSummaries},
		{"Transition", testTransition},
		{"TransitionBatch", testTransitionBatch},
		{"Replay", testReplay},
		{"ReplayFailure", testReplayFailure},
		{"ReplayConcurrent", testReplayConcurrent},
		{"Discard", testDiscard},
		{"Reconcile", testReconcile},
		{"ReconcileFailure", testReconcileFailure},
		{"ReplayAll", testReplayAll},
		{"ReplayAllRate", testReplayAllRate},
		{"ReplayAllStopsOnFailure", testReplayAllStopsOnFailure},
		{"Archive", testArchive},
		{"ArchiveExpired", testArchiveExpired},
		{"Metrics", testMetrics},
		{"BriefReads", testBriefReads},
		{"ReadValue", testReadValue},
		{"ShowAndPayload", testShowAndPayload},
		{"ReplayRoutes", testReplayRoutes},
		{"ReplayAllBatchBytes", testReplayAllBatchBytes},
		{"ReconcileWithoutRoute", testReconcileWithoutRoute},
		{"Groups", testGroups},
		{"Arrivals", testArrivals},
		{"ReplayAllResume", testReplayAllResume},
		{"ReplayAllClaimsStayFresh", testReplayAllClaimsStayFresh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			tt.fn(t, s)
		})
	}
}

// base is the reference time of the records the suite inserts.
var base = time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)

// entry returns a dead letter with a binary key, a binary value and
// headers with a binary value.
func entry(i int) dlq.Entry {
	return dlq.Entry{
		MessageID:         fmt.Sprintf("msg-%d", i),
		OriginalTopic:     "orders",
		OriginalPartition: -1,
		OriginalOffset:    -1,
		OriginalKey:       []byte{'k', 0x00, 0xff, byte(i)},
		OriginalValue:     []byte(fmt.Sprintf("{\n  \"n\": %d,\n  \"bin\": \"\xfe\"\n}", i)),
		OriginalHeaders:   map[string]string{"content-type": "application/json", "bin": "\x00\xff", "empty": ""},
		OriginalWire:      wireForm(i),
		ErrorClass:        "payout.BankError",
		ErrorMessage:      fmt.Sprintf("bank rejected transfer %d", i),
		StackTrace:        "goroutine 1 [running]:\nmain.main()",
		Reason:            string(driver.ReasonMaxRetries),
		RetryCount:        5,
		Worker:            "billing",
		WorkerInstance:    "billing-1",
		Source:            "orders.billing",
		FirstFailureAt:    base.Add(-time.Hour),
		LastFailureAt:     base.Add(-time.Minute),
	}
}

// wireForm is the exact form of entry i's headers.
func wireForm(i int) []byte {
	b, err := wire.Encode(wire.Form{Headers: wire.Table{{Name: "content-type", Value: "application/json"},
		{Name: "bin", Value: []byte{0, 0xff}}, {Name: "empty", Value: ""}, {Name: "n", Value: int32(i)}},
		Props: &wire.Properties{ContentType: "application/json", DeliveryMode: 2}})
	if err != nil {
		panic(err)
	}
	return b
}

// record returns a queueBackend record of dlqName whose identity is identity,
// received at base + i seconds.
func record(dlqName, identity string, i int) dlq.Record {
	return dlq.Record{
		Broker:     queueBackend,
		DLQ:        dlqName,
		Identity:   identity,
		Entry:      entry(i),
		ReceivedAt: base.Add(time.Duration(i) * time.Second),
	}
}

// mustInsert inserts r and fails unless it is new.
func mustInsert(t *testing.T, s dlq.Store, r dlq.Record) dlq.Record {
	t.Helper()
	got, inserted, err := s.Insert(context.Background(), r)
	if err != nil {
		t.Fatalf("Insert(%s/%s): %v", r.DLQ, r.Identity, err)
	}
	if !inserted {
		t.Fatalf("Insert(%s/%s): inserted = false for a new identity", r.DLQ, r.Identity)
	}
	return got
}

// fill inserts n records of dlqName with identities prefix-0…prefix-(n-1),
// and returns them in insertion order.
func fill(t *testing.T, s dlq.Store, dlqName, prefix string, n int, mod func(i int, r *dlq.Record)) []dlq.Record {
	t.Helper()
	out := make([]dlq.Record, 0, n)
	for i := range n {
		r := record(dlqName, fmt.Sprintf("%s-%d", prefix, i), i)
		if mod != nil {
			mod(i, &r)
		}
		out = append(out, mustInsert(t, s, r))
	}
	return out
}

// get reads a record or fails.
func get(t *testing.T, s dlq.Store, dlqName, id string) dlq.Record {
	t.Helper()
	r, err := s.Get(context.Background(), dlqName, id)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", dlqName, id, err)
	}
	return r
}

// listAll pages through q and returns every record, checking that pages
// are at most the limit and that only the last has no cursor.
func listAll(t *testing.T, s dlq.Store, q dlq.Query) []dlq.Record {
	t.Helper()
	var out []dlq.Record
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		p, err := s.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		if len(p.Records) > q.PageLimit() {
			t.Fatalf("page of %d records, limit %d", len(p.Records), q.PageLimit())
		}
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		if len(p.Records) == 0 {
			t.Fatal("empty page with a next cursor")
		}
		q.Cursor = p.Next
	}
}

// ids returns the identities of recs.
func ids(recs []dlq.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Identity
	}
	return out
}

// checkBrief checks that got is the Brief form of want: everything but
// the message, whose size is ValueSize.
func checkBrief(t *testing.T, got dlq.Record, want dlq.Entry) {
	t.Helper()
	e := got.Entry
	if !got.Brief || e.OriginalKey != nil || e.OriginalValue != nil || e.OriginalHeaders != nil || e.OriginalWire != nil {
		t.Errorf("record %s is not brief: Brief %v, key %q, value of %d bytes, headers %q, wire %q",
			got.ID, got.Brief, e.OriginalKey, len(e.OriginalValue), e.OriginalHeaders, e.OriginalWire)
	}
	if got.ValueSize != int64(len(want.OriginalValue)) {
		t.Errorf("record %s: ValueSize %d, want %d", got.ID, got.ValueSize, len(want.OriginalValue))
	}
	e.OriginalKey, e.OriginalValue, e.OriginalHeaders, e.OriginalWire = want.OriginalKey, want.OriginalValue, want.OriginalHeaders, want.OriginalWire
	checkEntry(t, e, want)
}

// checkEntry compares two entries field by field, byte for byte, nil apart
// from empty.
func checkEntry(t *testing.T, got, want dlq.Entry) {
	t.Helper()
	sameBytes := func(name string, g, w []byte) {
		if !bytes.Equal(g, w) || (g == nil) != (w == nil) {
			t.Errorf("%s = %q (nil %v), want %q (nil %v)", name, g, g == nil, w, w == nil)
		}
	}
	sameBytes("OriginalKey", got.OriginalKey, want.OriginalKey)
	sameBytes("OriginalValue", got.OriginalValue, want.OriginalValue)
	sameBytes("OriginalWire", got.OriginalWire, want.OriginalWire)
	if !maps.Equal(got.OriginalHeaders, want.OriginalHeaders) || (got.OriginalHeaders == nil) != (want.OriginalHeaders == nil) {
		t.Errorf("OriginalHeaders = %q, want %q", got.OriginalHeaders, want.OriginalHeaders)
	}
	got.OriginalKey, got.OriginalValue, got.OriginalHeaders, got.OriginalWire = nil, nil, nil, nil
	want.OriginalKey, want.OriginalValue, want.OriginalHeaders, want.OriginalWire = nil, nil, nil, nil
	if !got.FirstFailureAt.Equal(want.FirstFailureAt) || !got.LastFailureAt.Equal(want.LastFailureAt) {
		t.Errorf("failure times = %v, %v; want %v, %v", got.FirstFailureAt, got.LastFailureAt, want.FirstFailureAt, want.LastFailureAt)
	}
	got.FirstFailureAt, got.LastFailureAt, want.FirstFailureAt, want.LastFailureAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want); g != w {
		t.Errorf("entry =\n%s\nwant\n%s", g, w)
	}
}

// auditActions returns the actions of the audit trail of dlqName/id.
func auditActions(t *testing.T, s dlq.Store, dlqName, id string) []string {
	t.Helper()
	trail, err := s.Audit(context.Background(), dlqName, id)
	if err != nil {
		t.Fatalf("Audit(%s, %s): %v", dlqName, id, err)
	}
	out := make([]string, len(trail))
	for i, a := range trail {
		out[i] = a.Action
	}
	return out
}

// publisher is a Republisher that records what it is asked to publish and
// fails while fail is set.
type publisher struct {
	mu     sync.Mutex
	calls  []published
	fail   error
	during func(e dlq.Entry, from string) // called inside Republish
}

type published struct {
	entry dlq.Entry
	to    dlq.Route
	from  string
}

func (p *publisher) Republish(ctx context.Context, e dlq.Entry, to dlq.Route, from string) error {
	p.mu.Lock()
	during := p.during
	p.mu.Unlock()
	if during != nil {
		during(e, from)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.calls = append(p.calls, published{entry: e, to: to, from: from})
	return nil
}

func (p *publisher) setFail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = err
}

func (p *publisher) published() []published {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// routedDLQs are the DLQs of the suite whose entries (entry: worker
// "billing" of topic "orders") have a route.
var routedDLQs = []string{"all.dlq", "arch.dlq", "cr.dlq", "disc.dlq", "fail.dlq", "rate.dlq", "rate2.dlq",
	"rec.dlq", "recf.dlq", "replay.dlq", "stop.dlq", "tr.dlq", "conc.dlq", "conc-k.dlq", "batch.dlq", "mis.dlq", "m.dlq", "m2.dlq", "m3.dlq", "grp.dlq", "resume.dlq", "fresh.dlq"}

// route is the route of the suite's worker in dlqName.
func route(dlqName string) dlq.Route {
	return dlq.Route{DLQ: dlqName, Topic: "orders", Worker: "billing", Target: "orders.billing", Sources: []string{"orders.billing"}}
}

// opsConfig is the base configuration of the suite's Ops.
func opsConfig(s dlq.Store, p dlq.Republisher) operate.Config {
	cfg := operate.Config{
		Store:       s,
		Republisher: p,
		Logger:      slog.New(slog.DiscardHandler),
	}
	for _, name := range routedDLQs {
		cfg.Routes = append(cfg.Routes, route(name))
	}
	return cfg
}

// newOps returns Ops over s with p, or fails.
func newOps(t *testing.T, cfg operate.Config) *operate.Ops {
	t.Helper()
	o, err := operate.New(cfg)
	if err != nil {
		t.Fatalf("operate.New: %v", err)
	}
	return o
}

// gather returns the value of metric name with label dlq=dlqName in reg.
func gather(t *testing.T, reg *prometheus.Registry, name, dlqName string) (float64, bool) {
	t.Helper()
	m, _ := find(t, reg, name, dlqName)
	if m == nil {
		return 0, false
	}
	if c := m.GetCounter(); c != nil {
		return c.GetValue(), true
	}
	return m.GetGauge().GetValue(), true
}

// label returns the value of label key on the series of name for dlqName.
func label(t *testing.T, reg *prometheus.Registry, name, dlqName, key string) string {
	t.Helper()
	_, labels := find(t, reg, name, dlqName)
	return labels[key]
}

// find returns the series of name whose dlq label is dlqName, with its
// labels; nil when there is none.
func find(t *testing.T, reg *prometheus.Registry, name, dlqName string) (*dto.Metric, map[string]string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["dlq"] == dlqName {
				return m, labels
			}
		}
	}
	return nil, nil
}

// errBroker is the failure of the suite's failing publisher.
var errBroker = errors.New("broker unavailable")

// offsetID is the id a backend with offsets gives the dead letter at
// (partition, offset) (Kafka's "{partition}-{offset}"): the suite's
// example of a DeadLetter.ID the keeper supplies.
func offsetID(partition int32, offset int64) string {
	return strconv.FormatInt(int64(partition), 10) + "-" + strconv.FormatInt(offset, 10)
}

// The backends of the suite's records: any backend's name is stored (a
// driver.Descriptor's Name), whatever its kind. offsetBackend stands for
// one whose dead letters carry offset ids (Kafka's), queueBackend for one
// whose ids the store assigns (RabbitMQ's).
const (
	offsetBackend = "offsets"
	queueBackend  = "queues"
)
