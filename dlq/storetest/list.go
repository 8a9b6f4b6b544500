package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

func testListPaging(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	a := fill(t, s, "page-a.dlq", "a", 23, nil)
	b := fill(t, s, "page-b.dlq", "b", 5, nil)

	// Oldest first, three pages.
	q := dlq.Query{DLQ: "page-a.dlq", Limit: 10}
	var sizes []int
	var all []dlq.Record
	for {
		p, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Records))
		all = append(all, p.Records...)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	if !slices.Equal(sizes, []int{10, 10, 3}) {
		t.Errorf("page sizes = %v, want [10 10 3]", sizes)
	}
	if !slices.Equal(ids(all), ids(a)) {
		t.Errorf("paged listing = %v, want insertion order %v", ids(all), ids(a))
	}

	// Exactly one full page: no cursor to an empty page.
	p, err := s.List(ctx, dlq.Query{DLQ: "page-b.dlq", Limit: 5})
	if err != nil || len(p.Records) != 5 || p.Next != "" {
		t.Errorf("List of a full last page = %d records, next %q, %v; want 5, no cursor", len(p.Records), p.Next, err)
	}

	// Newest first.
	newest := listAll(t, s, dlq.Query{DLQ: "page-a.dlq", Limit: 7, NewestFirst: true})
	rev := slices.Clone(ids(a))
	slices.Reverse(rev)
	if !slices.Equal(ids(newest), rev) {
		t.Errorf("newest first = %v, want %v", ids(newest), rev)
	}

	// Every DLQ, default limit.
	every := listAll(t, s, dlq.Query{})
	if want := append(ids(a), ids(b)...); !slices.Equal(ids(every), want) {
		t.Errorf("listing every DLQ = %v, want %v", ids(every), want)
	}
	if n, err := s.Count(ctx, dlq.Query{}); err != nil || n != 28 {
		t.Errorf("Count(all) = %d, %v; want 28", n, err)
	}

	// A cursor survives records that leave the filter meanwhile.
	first, err := s.List(ctx, dlq.Query{DLQ: "page-a.dlq", Status: dlq.StatusPending, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range first.Records[:5] {
		if _, err := s.Transition(ctx, dlq.Transition{DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "t", Action: dlq.ActionDiscard, Reason: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	rest := listAll(t, s, dlq.Query{DLQ: "page-a.dlq", Status: dlq.StatusPending, Limit: 10, Cursor: first.Next})
	if !slices.Equal(ids(rest), ids(a[10:])) {
		t.Errorf("second page after changes = %v, want %v", ids(rest), ids(a[10:]))
	}
}

func testListFilters(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	// f-0…f-9 received at base+0s…base+9s; even ones are of class
	// "db.Timeout" with "Connection RESET" in the message.
	recs := fill(t, s, "filter.dlq", "f", 10, func(i int, r *dlq.Record) {
		if i%2 == 0 {
			r.Entry.ErrorClass = "db.Timeout"
			r.Entry.ErrorMessage = fmt.Sprintf("read: Connection RESET by peer (%d)", i)
		}
	})
	fill(t, s, "filter2.dlq", "g", 3, nil)
	for _, i := range []int{1, 2} {
		if _, err := s.Transition(ctx, dlq.Transition{DLQ: "filter.dlq", ID: recs[i].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "t", Action: dlq.ActionDiscard, Reason: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "filter.dlq", ID: recs[3].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplayed, Actor: "t"}); err != nil {
		t.Fatal(err)
	}
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	tests := []struct {
		name string
		q    dlq.Query
		want []string
	}{
		{"dlq", dlq.Query{DLQ: "filter.dlq"}, []string{"f-0", "f-1", "f-2", "f-3", "f-4", "f-5", "f-6", "f-7", "f-8", "f-9"}},
		{"other dlq", dlq.Query{DLQ: "filter2.dlq"}, []string{"g-0", "g-1", "g-2"}},
		{"unknown dlq", dlq.Query{DLQ: "nothing.dlq"}, nil},
		{"pending", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusPending}, []string{"f-0", "f-4", "f-5", "f-6", "f-7", "f-8", "f-9"}},
		{"discarded", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusDiscarded}, []string{"f-1", "f-2"}},
		{"replayed", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusReplayed}, []string{"f-3"}},
		{"replaying", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusReplaying}, nil},
		{"archived", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusArchived}, nil},
		{"error class", dlq.Query{DLQ: "filter.dlq", ErrorClass: "db.Timeout"}, []string{"f-0", "f-2", "f-4", "f-6", "f-8"}},
		{"error class is exact", dlq.Query{DLQ: "filter.dlq", ErrorClass: "db.timeout"}, nil},
		{"text ignores case", dlq.Query{DLQ: "filter.dlq", Text: "connection reset"}, []string{"f-0", "f-2", "f-4", "f-6", "f-8"}},
		{"text is a substring", dlq.Query{DLQ: "filter.dlq", Text: "(4)"}, []string{"f-4"}},
		{"text with LIKE wildcards is literal", dlq.Query{DLQ: "filter.dlq", Text: "%"}, nil},
		{"text with underscore is literal", dlq.Query{DLQ: "filter.dlq", Text: "_"}, nil},
		{"text with quote", dlq.Query{DLQ: "filter.dlq", Text: "1' OR '1'='1"}, nil},
		{"since", dlq.Query{DLQ: "filter.dlq", Since: at(7)}, []string{"f-7", "f-8", "f-9"}},
		{"until is exclusive", dlq.Query{DLQ: "filter.dlq", Until: at(2)}, []string{"f-0", "f-1"}},
		{"since and until", dlq.Query{DLQ: "filter.dlq", Since: at(3), Until: at(6)}, []string{"f-3", "f-4", "f-5"}},
		{"pending since and until", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusPending, Since: at(3), Until: at(6)}, []string{"f-4", "f-5"}},
		{"discarded until", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusDiscarded, Until: at(3)}, []string{"f-1", "f-2"}},
		{"archived since", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusArchived, Since: at(0)}, nil},
		{"everything at once", dlq.Query{DLQ: "filter.dlq", Status: dlq.StatusPending, ErrorClass: "db.Timeout", Text: "RESET", Since: at(1), Until: at(9)}, []string{"f-4", "f-6", "f-8"}},
		{"every dlq by class", dlq.Query{ErrorClass: "payout.BankError", Status: dlq.StatusPending}, []string{"f-5", "f-7", "f-9", "g-0", "g-1", "g-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, newest := range []bool{false, true} {
				q := tt.q
				q.Limit, q.NewestFirst = 2, newest
				got := ids(listAll(t, s, q))
				want := slices.Clone(tt.want)
				if newest {
					slices.Reverse(want)
				}
				if !slices.Equal(got, want) {
					t.Errorf("List(newest first %v) = %v, want %v", newest, got, want)
				}
			}
			if n, err := s.Count(ctx, tt.q); err != nil || n != int64(len(tt.want)) {
				t.Errorf("Count = %d, %v; want %d", n, err, len(tt.want))
			}
		})
	}
}

func testListInvalid(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	fill(t, s, "inv.dlq", "i", 3, nil)
	asc, err := s.List(ctx, dlq.Query{DLQ: "inv.dlq", Limit: 1})
	if err != nil || asc.Next == "" {
		t.Fatalf("List = %v, next %q", err, asc.Next)
	}
	tests := []struct {
		name string
		q    dlq.Query
	}{
		{"garbage cursor", dlq.Query{Cursor: "not-a-cursor"}},
		{"sql-ish cursor", dlq.Query{Cursor: "1' OR '1'='1"}},
		{"base64 of garbage", dlq.Query{Cursor: "YWJjZA"}},
		{"cursor of the other order", dlq.Query{DLQ: "inv.dlq", Cursor: asc.Next, NewestFirst: true}},
		{"limit too large", dlq.Query{Limit: dlq.MaxLimit + 1}},
		{"negative limit", dlq.Query{Limit: -1}},
		{"unknown status", dlq.Query{Status: "lost"}},
		{"since after until", dlq.Query{Since: base, Until: base.Add(-time.Second)}},
		{"dlq with slash", dlq.Query{DLQ: "../../etc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.List(ctx, tt.q); !errors.Is(err, dlq.ErrInvalidQuery) {
				t.Errorf("List = %v, want ErrInvalidQuery", err)
			}
		})
	}
}

func testSummaries(t *testing.T, s dlq.Store) {
	ctx := context.Background()
	if sums, err := s.Summaries(ctx); err != nil || len(sums) != 0 {
		t.Fatalf("Summaries of an empty store = %v, %v", sums, err)
	}
	a := fill(t, s, "sum-a.dlq", "a", 4, func(i int, r *dlq.Record) {
		if i == 3 {
			r.Severity = string(broker.SeverityCritical) // the newest decides
		}
	})
	fill(t, s, "sum-b.dlq", "b", 2, func(i int, r *dlq.Record) {
		r.Broker, r.Identity, r.ID = offsetBackend, "", offsetID(0, int64(i))
	})
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "sum-a.dlq", ID: a[0].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying, Actor: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "sum-a.dlq", ID: a[1].ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusDiscarded, Actor: "t"}); err != nil {
		t.Fatal(err)
	}
	sums, err := s.Summaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].DLQ != "sum-a.dlq" || sums[1].DLQ != "sum-b.dlq" {
		t.Fatalf("Summaries = %+v, want sum-a.dlq and sum-b.dlq in order", sums)
	}
	sa := sums[0]
	if sa.Pending != 2 || sa.Replaying != 1 || sa.Discarded != 1 || sa.Replayed != 0 || sa.Archived != 0 {
		t.Errorf("sum-a counts = %+v", sa)
	}
	if sa.Severity != string(broker.SeverityCritical) || sa.Broker != queueBackend {
		t.Errorf("sum-a severity, broker = %q, %q; want critical, rabbitmq", sa.Severity, sa.Broker)
	}
	if !sa.OldestPending.Equal(a[2].ReceivedAt) || !sa.LastReceived.Equal(a[3].ReceivedAt) {
		t.Errorf("sum-a oldest pending %v, last received %v; want %v, %v", sa.OldestPending, sa.LastReceived, a[2].ReceivedAt, a[3].ReceivedAt)
	}
	if sb := sums[1]; sb.Broker != offsetBackend || sb.Severity != string(broker.SeverityWarning) || sb.Pending != 2 {
		t.Errorf("sum-b = %+v, want kafka, warning, 2 pending", sb)
	}

	// The newest live record decides, even when a newer one (by insertion)
	// is archived.
	fill(t, s, "sum-c.dlq", "c", 2, func(i int, r *dlq.Record) {
		if i == 1 {
			r.Severity, r.ReceivedAt = string(broker.SeverityCritical), base.Add(-time.Hour)
		}
	})
	if n, err := s.Archive(ctx, "sum-c.dlq", base.Add(-time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("Archive = %d, %v", n, err)
	}
	sums, err = s.Summaries(ctx)
	if err != nil || len(sums) != 3 {
		t.Fatalf("Summaries = %+v, %v", sums, err)
	}
	if sc := sums[2]; sc.Severity != string(broker.SeverityWarning) || sc.Pending != 1 || sc.Archived != 1 {
		t.Errorf("sum-c = %+v, want the live record's severity (warning), 1 pending, 1 archived", sc)
	}
}
