package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

func testInsertRoundTrip(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	tests := []struct {
		name string
		mod  func(e *dlq.Entry)
	}{
		{"binary key, value and header", func(*dlq.Entry) {}},
		{"nil key, value, headers and wire form", func(e *dlq.Entry) {
			e.OriginalKey, e.OriginalValue, e.OriginalHeaders, e.OriginalWire = nil, nil, nil, nil
		}},
		{"empty key, value, headers and wire form", func(e *dlq.Entry) {
			e.OriginalKey, e.OriginalValue, e.OriginalHeaders, e.OriginalWire = []byte{}, []byte{}, map[string]string{}, []byte{}
		}},
		{"kafka coordinates and binary header name", func(e *dlq.Entry) {
			e.OriginalPartition, e.OriginalOffset = 3, 12345
			e.OriginalHeaders = map[string]string{"\xff\x00name": "v"}
		}},
		{"zero failure times", func(e *dlq.Entry) {
			e.FirstFailureAt, e.LastFailureAt = time.Time{}, time.Time{}
		}},
		{"large binary value", func(e *dlq.Entry) {
			e.OriginalValue = make([]byte, 3<<20+7) // read in chunks by pgstore
			for i := range e.OriginalValue {
				e.OriginalValue[i] = byte(i * 7)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := record("rt.dlq", fmt.Sprintf("rt-%d", i), i)
			tt.mod(&r.Entry)
			want := r.Entry
			got := mustInsert(t, s, r)
			if !dlq.ValidID(got.ID) {
				t.Errorf("generated id %q is not valid", got.ID)
			}
			if got.Status != dlq.StatusPending || got.Version != 1 || got.Severity != string(broker.SeverityWarning) {
				t.Errorf("inserted status %s, version %d, severity %q; want pending, 1, warning", got.Status, got.Version, got.Severity)
			}
			if !got.ReceivedAt.Equal(r.ReceivedAt) {
				t.Errorf("ReceivedAt = %v, want %v", got.ReceivedAt, r.ReceivedAt)
			}
			checkEntry(t, got.Entry, want)
			back := get(t, s, "rt.dlq", got.ID)
			checkEntry(t, back.Entry, want)
			if back.ID != got.ID || back.Identity != r.Identity || back.Broker != queueBackend || back.DLQ != "rt.dlq" ||
				back.Status != dlq.StatusPending || !back.ReceivedAt.Equal(r.ReceivedAt) || back.ReceivedAt.Location() != time.UTC ||
				!back.StatusChangedAt.Equal(got.StatusChangedAt) || back.Version != 1 {
				t.Errorf("Get = %+v\nInsert returned %+v", back, got)
			}
		})
	}
	if _, err := s.Get(ctx, "rt.dlq", "no-such-id"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Get(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "other.dlq", "rt-0"); !errors.Is(err, dlq.ErrNotFound) {
		t.Errorf("Get(unknown dlq) = %v, want ErrNotFound", err)
	}
}

func testInsertIdempotent(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	first := mustInsert(t, s, record("idem.dlq", "delivery-1", 1))
	again := record("idem.dlq", "delivery-1", 2) // a redelivery, different content
	got, inserted, err := s.Insert(ctx, again)
	if err != nil || inserted {
		t.Fatalf("second Insert = inserted %v, %v; want false, nil", inserted, err)
	}
	if got.ID != first.ID {
		t.Errorf("second Insert returned id %q, want the first's %q", got.ID, first.ID)
	}
	checkEntry(t, got.Entry, first.Entry)
	// The same identity in another DLQ is another message.
	other := mustInsert(t, s, record("idem2.dlq", "delivery-1", 1))
	for _, q := range []dlq.Query{{DLQ: "idem.dlq"}, {DLQ: "idem2.dlq"}} {
		if n, err := s.Count(ctx, q); err != nil || n != 1 {
			t.Errorf("Count(%s) = %d, %v; want 1", q.DLQ, n, err)
		}
	}
	if other.ID == "" {
		t.Error("no id for the second DLQ's record")
	}
}

func testInsertConcurrent(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rec  dlq.Record
	}{
		{"rabbitmq, generated ids", record("conc.dlq", "same-delivery", 1)},
		{"kafka, given ids", func() dlq.Record {
			r := record("conc-k.dlq", "", 1)
			r.Broker, r.ID = offsetBackend, offsetID(2, 99)
			return r
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 12
			var (
				wg       sync.WaitGroup
				start    = make(chan struct{})
				mu       sync.Mutex
				inserted int
				gotIDs   = map[string]bool{}
				errs     []error
			)
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, ok, err := s.Insert(ctx, tc.rec)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
						return
					}
					if ok {
						inserted++
					}
					gotIDs[r.ID] = true
				}()
			}
			close(start)
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("concurrent inserts failed: %v", errs)
			}
			if inserted != 1 || len(gotIDs) != 1 {
				t.Errorf("%d concurrent inserts of one identity: %d inserted, ids %v; want 1 and one id", n, inserted, gotIDs)
			}
			if c, err := s.Count(ctx, dlq.Query{DLQ: tc.rec.DLQ}); err != nil || c != 1 {
				t.Errorf("Count = %d, %v; want 1", c, err)
			}
		})
	}
}

func testInsertIDs(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	k := record("ids.dlq", "", 1)
	k.Broker, k.ID = offsetBackend, offsetID(3, 12345)
	got := mustInsert(t, s, k)
	if got.ID != "3-12345" || got.Identity != "3-12345" {
		t.Errorf("kafka record id, identity = %q, %q; want 3-12345 twice", got.ID, got.Identity)
	}
	// Generated ids are valid and distinct.
	seen := map[string]bool{}
	for _, r := range fill(t, s, "ids.dlq", "gen", 20, nil) {
		if !dlq.ValidID(r.ID) || seen[r.ID] {
			t.Errorf("generated id %q: valid %v, seen before %v", r.ID, dlq.ValidID(r.ID), seen[r.ID])
		}
		seen[r.ID] = true
	}
	// An id used by another identity.
	clash := record("ids.dlq", "another-identity", 2)
	clash.ID = "3-12345"
	if _, _, err := s.Insert(ctx, clash); !errors.Is(err, dlq.ErrIDConflict) {
		t.Errorf("Insert with a used id = %v, want ErrIDConflict", err)
	}
	if n, _ := s.Count(ctx, dlq.Query{DLQ: "ids.dlq"}); n != 21 {
		t.Errorf("Count = %d after the conflict, want 21", n)
	}
}

func testInsertInvalid(t *testing.T, s dlq.Store) {
	tests := []struct {
		name string
		mod  func(r *dlq.Record)
	}{
		{"no broker", func(r *dlq.Record) { r.Broker = "" }},
		{"malformed broker", func(r *dlq.Record) { r.Broker = "Not A Backend" }},
		{"no broker", func(r *dlq.Record) { r.Broker = "" }},
		{"no dlq", func(r *dlq.Record) { r.DLQ = "" }},
		{"dlq with slash", func(r *dlq.Record) { r.DLQ = "a/b.dlq" }},
		{"dlq dot-dot", func(r *dlq.Record) { r.DLQ = ".." }},
		{"dlq with NUL", func(r *dlq.Record) { r.DLQ = "a\x00.dlq" }},
		{"no id nor identity", func(r *dlq.Record) { r.Identity = "" }},
		{"path traversal id", func(r *dlq.Record) { r.ID = "../../etc" }},
		{"sql-ish id", func(r *dlq.Record) { r.ID = "1' OR '1'='1" }},
		{"id too long", func(r *dlq.Record) { r.ID = strings.Repeat("a", dlq.MaxIDLen+1) }},
		{"unknown severity", func(r *dlq.Record) { r.Severity = "urgent" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := record("inv.dlq", "x", 1)
			tt.mod(&r)
			if _, _, err := s.Insert(context.Background(), r); !errors.Is(err, dlq.ErrInvalidRecord) {
				t.Errorf("Insert = %v, want ErrInvalidRecord", err)
			}
		})
	}
	if n, err := s.Count(context.Background(), dlq.Query{}); err != nil || n != 0 {
		t.Errorf("Count after invalid inserts = %d, %v; want 0", n, err)
	}
}

func testInsertCleansText(t *testing.T, s dlq.Store) {
	r := record("text.dlq", "t", 1)
	r.Entry.ErrorMessage = "bad \x00 byte and \xff invalid"
	r.Entry.ErrorClass = "Class\x00"
	r.Entry.OriginalKey = []byte("\x00key\xff")
	got := mustInsert(t, s, r)
	back := get(t, s, "text.dlq", got.ID)
	if want := "bad \uFFFD byte and \uFFFD invalid"; back.Entry.ErrorMessage != want {
		t.Errorf("ErrorMessage = %q, want %q", back.Entry.ErrorMessage, want)
	}
	if back.Entry.ErrorClass != "Class\uFFFD" {
		t.Errorf("ErrorClass = %q", back.Entry.ErrorClass)
	}
	if string(back.Entry.OriginalKey) != "\x00key\xff" {
		t.Errorf("key = %q, want the bytes unchanged", back.Entry.OriginalKey)
	}
}

// testInsertBoundsText: whatever a producer wrote, an entry keeps at most
// dlq.MaxErrorMessageLen characters of its error message and
// dlq.MaxTextLen of its names, each with a marker counting the rest, and
// the first dlq.MaxStackTraceLen of its stack trace, by Insert and by
// InsertBatch (issue 40: a foreign DLQ's 2 MB message was kept whole).
func testInsertBoundsText(t *testing.T, s dlq.Store) {
	huge := strings.Repeat("é", 1<<20) // 2 MB
	bounded := func(r *dlq.Record) {
		r.Entry.ErrorMessage, r.Entry.StackTrace, r.Entry.ErrorClass, r.Entry.Worker = huge, huge, huge, huge
	}
	one := record("bounds.dlq", "one", 1)
	bounded(&one)
	many := record("bounds.dlq", "many", 2)
	bounded(&many)
	res, err := s.InsertBatch(context.Background(), []dlq.Record{many})
	if err != nil || res[0].Err != nil {
		t.Fatalf("InsertBatch: %v %v", err, res)
	}
	for _, id := range []string{mustInsert(t, s, one).ID, res[0].Stored.ID} {
		e := get(t, s, "bounds.dlq", id).Entry
		cut := func(n int) string {
			return strings.Repeat("é", n) + "… (" + strconv.Itoa(1<<20-n) + " more characters cut)"
		}
		if e.ErrorMessage != cut(dlq.MaxErrorMessageLen) || e.ErrorClass != cut(dlq.MaxTextLen) || e.Worker != cut(dlq.MaxTextLen) ||
			e.StackTrace != strings.Repeat("é", dlq.MaxStackTraceLen) {
			t.Errorf("entry %s keeps %d, %d, %d and %d bytes of error message, class, worker and stack trace; want %d, %d, %d and %d characters",
				id, len(e.ErrorMessage), len(e.ErrorClass), len(e.Worker), len(e.StackTrace),
				dlq.MaxErrorMessageLen, dlq.MaxTextLen, dlq.MaxTextLen, dlq.MaxStackTraceLen)
		}
	}
	// At the bound nothing is cut.
	r := record("bounds.dlq", "exact", 3)
	r.Entry.ErrorMessage = strings.Repeat("é", dlq.MaxErrorMessageLen)
	if e := get(t, s, "bounds.dlq", mustInsert(t, s, r).ID).Entry; e.ErrorMessage != r.Entry.ErrorMessage {
		t.Errorf("a message of exactly %d characters was changed", dlq.MaxErrorMessageLen)
	}
}

// testInsertAnyBackend: a store keeps the dead letters of any backend,
// named as its descriptor names it (1 to 32 characters of [a-z0-9_-]),
// and gives its name back; Summaries tells backends apart.
func testInsertAnyBackend(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	names := []string{"memory", "nats-jetstream", "sqs_fifo", strings.Repeat("b", 32)}
	for i, name := range names {
		r := record("any-backend.dlq", fmt.Sprintf("any-%d", i), i)
		r.Broker = name
		got := mustInsert(t, s, r)
		back, err := s.Get(ctx, got.DLQ, got.ID)
		if err != nil {
			t.Fatalf("Get %s: %v", got.Key(), err)
		}
		if back.Broker != name {
			t.Errorf("the record of backend %q reads back as %q", name, back.Broker)
		}
	}
	r := record("any-backend.dlq", "any-long", 9)
	r.Broker = strings.Repeat("b", 33)
	if _, _, err := s.Insert(ctx, r); !errors.Is(err, dlq.ErrInvalidRecord) {
		t.Errorf("a backend name of 33 characters: %v, want ErrInvalidRecord", err)
	}
}
