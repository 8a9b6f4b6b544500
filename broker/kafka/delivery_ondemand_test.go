package kafka

import (
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
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
			broker.HeaderMessageID, "m-1", headerOriginTimestamp, "2026-01-02T03:04:05Z")},
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
