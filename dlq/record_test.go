package dlq_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []dlq.Cursor{{After: 0}, {After: 1}, {After: 1<<62 + 7, NewestFirst: true}} {
		s := c.Encode()
		if strings.ContainsAny(s, "/+=?&# ") {
			t.Errorf("cursor %q is not URL-safe", s)
		}
		got, err := dlq.DecodeCursor(s)
		if err != nil || got != c {
			t.Errorf("DecodeCursor(Encode(%+v)) = %+v, %v", c, got, err)
		}
	}
	for _, bad := range []string{"x", "YQ", "../../etc", "1' OR '1'='1", "YzFhLTE", "YzF4MQ", strings.Repeat("A", 100), "YzFhOTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk"} {
		if _, err := dlq.DecodeCursor(bad); !errors.Is(err, dlq.ErrInvalidQuery) {
			t.Errorf("DecodeCursor(%q) = %v, want ErrInvalidQuery", bad, err)
		}
	}
}

func TestQueryValidate(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		q     dlq.Query
		field string // "" = valid
	}{
		{"zero", dlq.Query{}, ""},
		{"full", dlq.Query{DLQ: "a.b.dlq", Status: dlq.StatusArchived, ErrorClass: "x", Text: "y", Since: now.Add(-time.Hour), Until: now, Limit: dlq.MaxLimit}, ""},
		{"bad dlq", dlq.Query{DLQ: "a/b"}, "dlq"},
		{"bad status", dlq.Query{Status: "PENDING"}, "status"},
		{"limit", dlq.Query{Limit: dlq.MaxLimit + 1}, "limit"},
		{"empty range", dlq.Query{Since: now, Until: now}, "since"},
		{"long text", dlq.Query{Text: strings.Repeat("x", 2000)}, "text"},
		{"bad cursor", dlq.Query{Cursor: "zz"}, "cursor"},
		{"cursor of other order", dlq.Query{Cursor: dlq.Cursor{After: 3}.Encode(), NewestFirst: true}, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			if tt.field == "" {
				if err != nil {
					t.Errorf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, dlq.ErrInvalidQuery) || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate = %v, want ErrInvalidQuery naming %s", err, tt.field)
			}
		})
	}
	if got := (dlq.Query{}).PageLimit(); got != dlq.DefaultLimit {
		t.Errorf("default page limit %d", got)
	}
}

func TestIDs(t *testing.T) {
	valid := []string{"0-12345", "a", "01jd5m8x4k0000000000000000", "A.b_c-d", strings.Repeat("a", dlq.MaxIDLen)}
	invalid := []string{"", "-1", ".hidden", "../../etc", "a/b", "1' OR '1'='1", "a b", "é", "a\x00", strings.Repeat("a", dlq.MaxIDLen+1)}
	for _, id := range valid {
		if !dlq.ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	for _, id := range invalid {
		if dlq.ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
	if got := offsetID(3, 12345); !dlq.ValidID(got) {
		t.Errorf("an offset id %q is not a valid record id", got)
	}
	t0 := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	a, b := dlq.NewID(t0), dlq.NewID(t0.Add(time.Millisecond))
	if len(a) != 26 || !dlq.ValidID(a) || a == b || a >= b {
		t.Errorf("NewID = %q then %q; want 26 valid characters, increasing with time", a, b)
	}
	if c, d := dlq.NewID(t0), dlq.NewID(t0); c == d {
		t.Error("two NewIDs of one millisecond are equal")
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"orders.billing.dlq": true, "orders.dlq": true, "commandes.é.dlq": true,
		"": false, ".": false, "..": false, "a/b": false, "a\nb": false, "a\x00": false, "\xff": false,
		strings.Repeat("a", 255): true, strings.Repeat("a", 256): false,
	} {
		if got := dlq.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{"ok é": "ok é", "a\x00b": "a\uFFFDb", "a\xffb": "a\uFFFDb", "": ""} {
		if got := dlq.CleanText(in); got != want {
			t.Errorf("CleanText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrepareInsert(t *testing.T) {
	now := time.Date(2025, 1, 15, 10, 30, 0, 123456789, time.FixedZone("X", 3600))
	r, err := dlq.Record{Broker: "kafka", DLQ: "o.dlq", ID: "1-2", Status: dlq.StatusReplayed, Version: 9}.PrepareInsert(now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Identity != "1-2" || r.Status != dlq.StatusPending || r.Version != 1 || r.Severity != string(broker.SeverityWarning) ||
		r.ReceivedAt != now.UTC().Truncate(time.Microsecond) || r.ReceivedAt.Location() != time.UTC {
		t.Errorf("PrepareInsert = %+v", r)
	}
	r, err = dlq.Record{Broker: "rabbitmq", DLQ: "q.dlq", Identity: "m1"}.PrepareInsert(now)
	if err != nil || !dlq.ValidID(r.ID) {
		t.Errorf("generated id %q, %v", r.ID, err)
	}
}

// offsetID is the id a backend with offsets gives a dead letter.
func offsetID(partition int32, offset int64) string {
	return strconv.FormatInt(int64(partition), 10) + "-" + strconv.FormatInt(offset, 10)
}
