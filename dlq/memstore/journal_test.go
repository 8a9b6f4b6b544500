package memstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
)

func sample(identity string) dlq.Record {
	return dlq.Record{
		Broker: "rabbitmq", DLQ: "orders.billing.dlq", Identity: identity,
		Entry: dlq.Entry{
			OriginalTopic: "orders", OriginalPartition: -1, OriginalOffset: -1,
			OriginalKey: []byte{0, 0xff}, OriginalValue: []byte("{\n \"a\": \"\xfe\"}"),
			OriginalHeaders: map[string]string{"bin\xff": "\x00\xfe", "empty": ""},
			OriginalWire:    []byte{1, 0, 1, 1, 'n', 's', 0xff, 0xfe}, // header n: int16 -2
			ErrorClass:      "x.Err", ErrorMessage: "boom", Source: "orders.billing",
			LastFailureAt: time.Date(2025, 1, 15, 10, 30, 0, 123456789, time.UTC),
		},
	}
}

// What one process wrote, the next reads back byte for byte, with its
// audit trail and archive; the journal is compacted on open.
func TestJournalSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dlq.jsonl")
	s, err := memstore.Open(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := s.Insert(ctx, sample("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Insert(ctx, sample("b"))
	if err != nil {
		t.Fatal(err)
	}
	nilRec := sample("nil")
	nilRec.Entry.OriginalKey, nilRec.Entry.OriginalValue, nilRec.Entry.OriginalHeaders = nil, nil, nil
	c, _, err := s.Insert(ctx, nilRec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: a.DLQ, ID: a.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "alice", Action: dlq.ActionDiscard, Reason: "dup"}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Archive(ctx, a.DLQ, time.Now().Add(time.Hour), 1); err != nil || n != 1 {
		t.Fatalf("Archive = %d, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)

	s2, err := memstore.Open(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Get(ctx, a.DLQ, a.ID)
	if err != nil || got.Status != dlq.StatusArchived || got.Version != 3 {
		t.Fatalf("reopened record a = %s v%d, %v; want archived v3", got.Status, got.Version, err)
	}
	trail, err := s2.Audit(ctx, a.DLQ, a.ID)
	if err != nil || len(trail) != 1 || trail[0].Reason != "dup" || trail[0].Actor != "alice" {
		t.Fatalf("reopened audit = %+v, %v", trail, err)
	}
	gb, err := s2.Get(ctx, b.DLQ, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := sample("b").Entry
	if !bytes.Equal(gb.Entry.OriginalKey, want.OriginalKey) || !bytes.Equal(gb.Entry.OriginalValue, want.OriginalValue) ||
		gb.Entry.OriginalHeaders["bin\xff"] != "\x00\xfe" || gb.Entry.OriginalHeaders["empty"] != "" || len(gb.Entry.OriginalHeaders) != 2 ||
		!gb.Entry.LastFailureAt.Equal(want.LastFailureAt.Truncate(time.Microsecond)) ||
		!bytes.Equal(gb.Entry.OriginalWire, want.OriginalWire) || gb.ValueSize != int64(len(want.OriginalValue)) {
		t.Errorf("reopened entry = %+v, want %+v", gb.Entry, want)
	}
	gc, err := s2.Get(ctx, c.DLQ, c.ID)
	if err != nil || gc.Entry.OriginalKey != nil || gc.Entry.OriginalValue != nil || gc.Entry.OriginalHeaders != nil {
		t.Errorf("nil key/value/headers came back as %q %q %v (%v)", gc.Entry.OriginalKey, gc.Entry.OriginalValue, gc.Entry.OriginalHeaders, err)
	}
	// Idempotency and id sequence survive.
	if _, inserted, err := s2.Insert(ctx, sample("b")); err != nil || inserted {
		t.Errorf("re-Insert after reopen: inserted %v, %v", inserted, err)
	}
	p, err := s2.List(ctx, dlq.Query{})
	if err != nil || len(p.Records) != 2 || p.Records[0].ID != b.ID || p.Records[1].ID != c.ID {
		t.Errorf("List after reopen = %v, %v", p.Records, err)
	}
	after, _ := os.ReadFile(path)
	if got, was := bytes.Count(after, []byte("\n")), bytes.Count(before, []byte("\n")); got != 4 || was != 5 {
		t.Errorf("journal lines: %d before compaction, %d after; want 5 (one per change) and 4 (3 records, 1 audit row)", was, got)
	}
}

// A journal written before entries kept their wire form (no "wire" field)
// reads back, the entries without it.
func TestJournalWithoutWire(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dlq.jsonl")
	s, err := memstore.Open(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Insert(ctx, sample("old"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	old := bytes.Replace(data, []byte(`,"wire":"AQABAW5z//4="`), nil, 1)
	if bytes.Equal(old, data) {
		t.Fatalf("the journal has no wire field to remove: %s", data)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := memstore.Open(path, quiet())
	if err != nil {
		t.Fatalf("Open of a journal without wire forms: %v", err)
	}
	defer s2.Close()
	got, err := s2.Get(ctx, r.DLQ, r.ID)
	if err != nil || got.Entry.OriginalWire != nil || got.Entry.OriginalHeaders["empty"] != "" || len(got.Entry.OriginalHeaders) != 2 {
		t.Errorf("old entry = %+v, %v; want its string headers and no wire form", got.Entry, err)
	}
}

func TestJournalTornLastLine(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "dlq.jsonl")
	s, err := memstore.Open(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Insert(ctx, sample("a"))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"rec":{"seq":2,"id":"tor`) // a crash mid-write
	_ = f.Close()

	s2, err := memstore.Open(path, quiet())
	if err != nil {
		t.Fatalf("Open with a torn last line: %v", err)
	}
	defer s2.Close()
	if _, err := s2.Get(ctx, r.DLQ, r.ID); err != nil {
		t.Errorf("the complete record is lost: %v", err)
	}
	if n, _ := s2.Count(ctx, dlq.Query{}); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func TestJournalDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.jsonl")
	if err := os.WriteFile(path, []byte("{\"rec\":{\"seq\":1}}\nnot json\n{\"rec\":{\"seq\":2}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := memstore.Open(path, quiet())
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Open of a damaged journal = %v, want an error naming line 2", err)
	}
	if _, err := memstore.Open(filepath.Join(t.TempDir(), "no", "such", "dir", "x.jsonl"), quiet()); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}
