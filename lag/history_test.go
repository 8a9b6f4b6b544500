package lag

import (
	"time"

	"testing"

	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestSamplerHistory: each sample adds a point per consumer group (records
// summed over topics, seconds) and per existing queue, and each series
// keeps only HistoryPoints points; a failed sample adds none.
func TestSamplerHistory(t *testing.T) {
	e := newKafka(t)
	e.produce(t, 0, 10, time.Now())
	e.commit(t, "payout-executor", map[int32]int64{0: 3})
	ch := rabbitChannel(t)
	q := declareQueue(t, ch, 5)
	s, err := NewSampler(SamplerConfig{Monitor: both{e.measurer(t, "payout-executor"), newDepth(t, testenv.RabbitMQ.URL(), q, q+".absent")},
		Source: "both", HistoryPoints: 2})
	if err != nil {
		t.Fatal(err)
	}
	if h := s.History(); len(h.GroupRecords)+len(h.GroupSeconds)+len(h.QueueMessages) != 0 {
		t.Fatalf("history before the first sample: %+v", h)
	}
	for range 3 {
		if err := s.Sample(t.Context()); err != nil {
			t.Fatalf("Sample: %v", err)
		}
	}
	h := s.History()
	for _, c := range []struct {
		kind   string
		series []Series
		name   string
		want   float64 // the newest value; <0: any
	}{
		{"records", h.GroupRecords, "payout-executor", 7},
		{"seconds", h.GroupSeconds, "payout-executor", -1},
		{"rabbit", h.QueueMessages, q, 5},
	} {
		if len(c.series) != 1 || c.series[0].Name != c.name || len(c.series[0].Points) != 2 {
			t.Errorf("%s history = %+v, want 2 points of %s", c.kind, c.series, c.name)
			continue
		}
		pts := c.series[0].Points
		if !pts[0].T.Before(pts[1].T) {
			t.Errorf("%s points not oldest first: %v", c.kind, pts)
		}
		if c.want >= 0 && pts[1].V != c.want {
			t.Errorf("%s newest = %v, want %v", c.kind, pts[1].V, c.want)
		}
	}
	if h.Interval != DefaultSampleInterval {
		t.Errorf("Interval = %s", h.Interval)
	}
	if _, err := NewSampler(SamplerConfig{Monitor: newDepth(t, testenv.RabbitMQ.URL()), Source: "rabbitmq", HistoryPoints: -1}); err == nil {
		t.Error("NewSampler with HistoryPoints -1 succeeded")
	}
}
