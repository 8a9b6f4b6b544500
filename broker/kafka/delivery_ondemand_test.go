package kafka

import (
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// HeadersOnDemand gives the handler the headers and the story a built
// Headers map gives, without the map.
func TestFillHeadersOnDemand(t *testing.T) {
	cfg := Config{Brokers: []string{"unused:9092"}, InstanceID: "i"}.withDefaults()
	br := &Broker{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	c := newConsumer(br, broker.Subscription{Topic: "t", Group: "g", HeadersOnDemand: true}.WithDefaults(), br.log)
	hdr := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		headers []kgo.RecordHeader
	}{
		{"no headers", nil},
		{"application headers", hdr("a", "1", "traceparent", "00-x", "empty", "")},
		{"a repeated name keeps its last value", hdr("a", "1", "b", "2", "a", "3")},
		{"redrive's story", hdr("a", "1", broker.HeaderAttempt, "3", broker.HeaderError, "boom",
			driver.HeaderMessageID, "m-1", headerOriginTimestamp, "2026-01-02T03:04:05Z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &kgo.Record{Topic: "t", Partition: 2, Offset: 7, Value: []byte("v"), Timestamp: time.Unix(1, 0), Headers: tc.headers}
			full, od := new(broker.Delivery), new(broker.Delivery)
			ownFull, ownOD := c.fill(full, r, false), c.fill(od, r, true)
			if ownFull != ownOD {
				t.Fatalf("own: %v on demand, %v built", ownOD, ownFull)
			}
			if od.Headers != nil {
				t.Fatalf("on demand Headers = %v, want nil", od.Headers)
			}
			if got := maps.Collect(od.AllHeaders()); !maps.Equal(got, full.Headers) && !(len(got) == 0 && len(full.Headers) == 0) {
				t.Errorf("AllHeaders = %v, want %v", got, full.Headers)
			}
			for k, v := range full.Headers {
				if got := od.Header(k); got != v {
					t.Errorf("Header(%q) = %q, want %q", k, got, v)
				}
			}
			if od.Header("absent") != "" {
				t.Errorf("Header of an absent name = %q", od.Header("absent"))
			}
			if od.ID != full.ID || od.Attempt != full.Attempt || od.LastError != full.LastError || od.Topic != full.Topic ||
				!od.Timestamp.Equal(full.Timestamp) {
				t.Errorf("on demand %+v, built %+v", od, full)
			}
		})
	}
}

// fill's one pass over the headers gives what looking each one up gives:
// the message id (the last, when repeated), the story and the original
// timestamp, in both header modes; story reports any x-redrive-* header
// besides the message id.
func TestFillReadsTheStory(t *testing.T) {
	cfg := Config{Brokers: []string{"unused:9092"}, InstanceID: "i"}.withDefaults()
	br := &Broker{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	c := newConsumer(br, broker.Subscription{Topic: "t", Group: "g"}.WithDefaults(), br.log)
	const at = "2026-01-02T03:04:05Z"
	for _, tc := range []struct {
		name  string
		kv    []string
		story bool
	}{
		{"no headers", nil, false},
		{"application headers", []string{"a", "1"}, false},
		{"only the message id", []string{"a", "1", driver.HeaderMessageID, "m-1"}, false},
		{"a repeated message id", []string{driver.HeaderMessageID, "m-1", "a", "1", driver.HeaderMessageID, "m-2"}, false},
		{"the id and an attempt", []string{driver.HeaderMessageID, "m-1", broker.HeaderAttempt, "3"}, true},
		{"a story without an id", []string{broker.HeaderAttempt, "2", broker.HeaderFirstFailureAt, at,
			broker.HeaderLastFailureAt, at, broker.HeaderError, "boom"}, true},
		{"a retry copy's origin", []string{driver.HeaderMessageID, "m-1", headerOriginTimestamp, at}, true},
		{"a due time", []string{driver.HeaderDueAt, at}, true},
		{"a remaining delay", []string{broker.HeaderRemainingDelay, "100"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hs []kgo.RecordHeader
			h := map[string]string{}
			for i := 0; i < len(tc.kv); i += 2 {
				hs = append(hs, kgo.RecordHeader{Key: tc.kv[i], Value: []byte(tc.kv[i+1])})
				h[tc.kv[i]] = tc.kv[i+1]
			}
			r := &kgo.Record{Topic: "t", Partition: 2, Offset: 7, Value: []byte("v"), Timestamp: time.Unix(1, 0), Headers: hs}
			// What looking each header up gives.
			want := &broker.Delivery{Message: broker.Message{ID: h[driver.HeaderMessageID], Headers: h, Timestamp: r.Timestamp}}
			if ts, ok := h[headerOriginTimestamp]; ok {
				want.Timestamp, _ = time.Parse(time.RFC3339Nano, ts)
			}
			driver.ReadStory(want)
			for _, onDemand := range []bool{false, true} {
				d := new(broker.Delivery)
				story := c.fill(d, r, onDemand)
				if story != tc.story {
					t.Errorf("on demand %v: story %v, want %v", onDemand, story, tc.story)
				}
				if d.ID != want.ID || d.Attempt != want.Attempt || d.LastError != want.LastError ||
					!d.Timestamp.Equal(want.Timestamp) || !d.FirstFailureAt.Equal(want.FirstFailureAt) || !d.LastFailureAt.Equal(want.LastFailureAt) {
					t.Errorf("on demand %v: id %q attempt %d error %q timestamp %v first %v last %v, want %q %d %q %v %v %v", onDemand,
						d.ID, d.Attempt, d.LastError, d.Timestamp, d.FirstFailureAt, d.LastFailureAt,
						want.ID, want.Attempt, want.LastError, want.Timestamp, want.FirstFailureAt, want.LastFailureAt)
				}
			}
		})
	}
}
