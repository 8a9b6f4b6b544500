package kafka

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// BenchmarkNewRecord measures building the record of a message with one
// application header and no id (Publish's per-message work).
func BenchmarkNewRecord(b *testing.B) {
	m := broker.Message{Value: make([]byte, 1024), Headers: map[string]string{"seq": "12345"}}
	now := time.Now() // Publish reads the clock once a call
	b.ReportAllocs()
	for b.Loop() {
		sink = newRecord("topic", m, time.Time{}, now)
	}
}

// BenchmarkRawRecord is what the raw producer of `redrive bench` does per
// message, for comparison.
func BenchmarkRawRecord(b *testing.B) {
	m := broker.Message{Value: make([]byte, 1024), Headers: map[string]string{"seq": "12345"}}
	b.ReportAllocs()
	for b.Loop() {
		sink = &kgo.Record{Topic: "topic", Value: m.Value, Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(m.Headers["seq"])}}}
	}
}

var sink *kgo.Record

func TestNewRecordHeaders(t *testing.T) {
	due := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	names := func(r *kgo.Record) (out []string) {
		for _, h := range r.Headers {
			out = append(out, h.Key+"="+string(h.Value))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		m    broker.Message
		due  time.Time
		want []string
	}{
		{"sorted, id last", broker.Message{ID: "id-1", Headers: map[string]string{"b": "2", "a": "1", "c": ""}},
			time.Time{}, []string{"a=1", "b=2", "c=", driver.HeaderMessageID + "=id-1"}},
		{"ID wins over the header", broker.Message{ID: "id-2", Headers: map[string]string{driver.HeaderMessageID: "old"}},
			time.Time{}, []string{driver.HeaderMessageID + "=id-2"}},
		{"header id kept", broker.Message{Headers: map[string]string{driver.HeaderMessageID: "from-header", "x": "y"}},
			time.Time{}, []string{"x=y", driver.HeaderMessageID + "=from-header"}},
		{"due replaces the header", broker.Message{ID: "id-3", Headers: map[string]string{driver.HeaderDueAt: "stale"}},
			due, []string{driver.HeaderMessageID + "=id-3", driver.HeaderDueAt + "=" + wire.FormatTime(due)}},
		{"own timestamp kept", broker.Message{ID: "id-5", Timestamp: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
			time.Time{}, []string{driver.HeaderMessageID + "=id-5"}},
		{"due header kept without a delay", broker.Message{ID: "id-4", Headers: map[string]string{driver.HeaderDueAt: "kept"}},
			time.Time{}, []string{driver.HeaderDueAt + "=kept", driver.HeaderMessageID + "=id-4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
			r := newRecord("t", tc.m, tc.due, now)
			got := names(r)
			if len(got) != len(tc.want) {
				t.Fatalf("headers %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("headers %v, want %v", got, tc.want)
				}
			}
			if want := cmp.Or(tc.m.Timestamp, now); !r.Timestamp.Equal(want) {
				t.Errorf("timestamp %s, want %s (the message's, else the call's)", r.Timestamp, want)
			}
		})
	}
	// Many headers (more than the stack buffer), and a new id per record.
	h := map[string]string{}
	for i := range 20 {
		h[string(rune('a'+i))] = strings.Repeat("v", i)
	}
	now := time.Now()
	r1, r2 := newRecord("t", broker.Message{Headers: h}, time.Time{}, now), newRecord("t", broker.Message{Headers: h}, time.Time{}, now)
	if len(r1.Headers) != 21 || messageID(r1) == "" || messageID(r1) == messageID(r2) || len(messageID(r1)) != 32 {
		t.Fatalf("ids %q %q, %d headers", messageID(r1), messageID(r2), len(r1.Headers))
	}
	for i, x := range r1.Headers[:20] {
		if x.Key != string(rune('a'+i)) || string(x.Value) != strings.Repeat("v", i) {
			t.Fatalf("header %d = %s=%s", i, x.Key, x.Value)
		}
	}
}
