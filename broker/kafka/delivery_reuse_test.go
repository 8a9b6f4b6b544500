package kafka

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
)

// With ReuseDeliveries a worker's next batch is built in the same
// Deliveries and, with a Headers map, the same maps, cleared: a record
// finds only its own headers, never what the last record or its handler
// left. A map that held more than maxReusedHeaders entries is dropped, not
// kept for the next record, and a map the handler put in Headers is
// neither reused nor cleared.
func TestReusedDeliveries(t *testing.T) {
	p := workerOf(broker.Subscription{Topic: "t", Group: "g", ReuseDeliveries: true})
	rec := func(off int64, headers int) *kgo.Record {
		r := &kgo.Record{Topic: "t", Offset: off, Value: []byte(strconv.FormatInt(off, 10))}
		for i := range headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: "h" + strconv.Itoa(i), Value: []byte(strconv.FormatInt(off, 10))})
		}
		return r
	}
	mapID := func(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }
	wantHeaders := func(t *testing.T, d *broker.Delivery, r *kgo.Record) {
		t.Helper()
		want := map[string]string{}
		for _, h := range r.Headers {
			want[h.Key] = string(h.Value)
		}
		if !maps.Equal(d.Headers, want) || string(d.Value) != string(r.Value) || d.Offset != r.Offset {
			t.Fatalf("offset %d: value %q headers %v, want offset %d value %q headers %v", d.Offset, d.Value, d.Headers, r.Offset, r.Value, want)
		}
	}

	// The first batch: many headers, a story (a replayed message's), and
	// one whose handler swaps the map.
	story := rec(1, 3)
	story.Headers = append(story.Headers,
		kgo.RecordHeader{Key: broker.HeaderAttempt, Value: []byte("3")},
		kgo.RecordHeader{Key: broker.HeaderError, Value: []byte("boom")},
		kgo.RecordHeader{Key: broker.HeaderFirstFailureAt, Value: []byte("2026-01-02T03:04:05Z")})
	first := []*kgo.Record{rec(0, maxReusedHeaders+1), story, rec(2, 2)}
	p.newSlab(len(first))
	var ds []*broker.Delivery
	for _, r := range first {
		d, _ := p.newDelivery(r)
		wantHeaders(t, d, r)
		ds = append(ds, d)
	}
	if ds[1].Attempt != 3 || ds[1].LastError != "boom" || ds[1].FirstFailureAt.IsZero() {
		t.Fatalf("the story was not read: attempt %d, error %q, first failure %v", ds[1].Attempt, ds[1].LastError, ds[1].FirstFailureAt)
	}
	ds[0].Redelivered = true // as a handler may set any field
	big, small, swapped := mapID(ds[0].Headers), mapID(ds[1].Headers), mapID(ds[2].Headers)
	ds[1].Headers["written"] = "by the handler"
	mine := map[string]string{"mine": "kept"}
	ds[2].Headers = mine

	second := []*kgo.Record{rec(3, 1), rec(4, 1), rec(5, 0)}
	p.newSlab(len(second))
	for i, r := range second {
		d, _ := p.newDelivery(r)
		if d != ds[i] {
			t.Fatalf("record %d: Delivery %p, want the reused %p", i, d, ds[i])
		}
		wantHeaders(t, d, r)
		if d.Attempt != 1 || d.LastError != "" || !d.FirstFailureAt.IsZero() || d.Redelivered {
			t.Fatalf("record %d kept the last record's story: attempt %d, error %q, first failure %v, redelivered %v",
				i, d.Attempt, d.LastError, d.FirstFailureAt, d.Redelivered)
		}
	}
	switch {
	case mapID(ds[0].Headers) == big:
		t.Errorf("a map that held %d headers was reused", maxReusedHeaders+1)
	case mapID(ds[1].Headers) != small:
		t.Errorf("the Headers map of a Delivery was not reused")
	case mapID(ds[2].Headers) != swapped || mapID(ds[2].Headers) == mapID(mine):
		t.Errorf("Headers reused the handler's map, not the Delivery's own")
	case !maps.Equal(mine, map[string]string{"mine": "kept"}):
		t.Errorf("the handler's map changed: %v", mine)
	}

	// Without ReuseDeliveries, every batch has Deliveries of its own.
	p = workerOf(broker.Subscription{Topic: "t", Group: "g"})
	p.newSlab(1)
	d0, _ := p.newDelivery(rec(0, 1))
	p.newSlab(1)
	if d1, _ := p.newDelivery(rec(1, 1)); d1 == d0 || d0.Offset != 0 || d0.Headers["h0"] != "0" {
		t.Fatalf("without ReuseDeliveries a Delivery was reused (offset %d, headers %v)", d0.Offset, d0.Headers)
	}
}

// workerOf returns a partition worker of sub (with its defaults), not
// started and without a client: newSlab and newDelivery need neither.
func workerOf(sub broker.Subscription) *partition {
	cfg := Config{Brokers: []string{"unused:9092"}, InstanceID: "i"}.withDefaults()
	br := &Broker{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	c := newConsumer(br, sub.WithDefaults(), br.log)
	c.hctx = context.Background()
	return newPartition(c, "t", 0)
}
