package heartbeat

import (
	"testing"
	"time"

	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestSamplerHistory: each sample adds the instances by state, every
// state included, HistoryPoints points of each kept; a sample that
// cannot read Redis adds none.
func TestSamplerHistory(t *testing.T) {
	rdb, prefix := newRedis(t)
	ctx := t.Context()
	live := newPublisher(t, rdb, PublisherConfig{Type: "payout-executor", Instance: "live", Prefix: prefix})
	paused := newPublisher(t, rdb, PublisherConfig{Type: "payout-executor", Instance: "paused", Prefix: prefix})
	paused.SetPaused(PausedByOperator, "bank maintenance", time.Time{})
	for _, p := range []*Publisher{live, paused} {
		if err := p.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	keys := Keys{Prefix: prefix}
	rdb.ZAdd(ctx, keys.Registry("refund-executor"), redisZ(time.Now().Add(-time.Hour), "gone"))
	rdb.SAdd(ctx, keys.Types(), "refund-executor")

	px := tcpproxy.New(t, testenv.Redis.URL())
	s := newSampler(t, newMonitor(t, client(t, px.Addr()), MonitorConfig{Prefix: prefix}), SamplerConfig{HistoryPoints: 2})
	if h := s.History(); len(h.States) != 0 {
		t.Fatalf("history before the first sample: %+v", h)
	}
	for range 3 {
		if err := s.Sample(ctx); err != nil {
			t.Fatalf("Sample: %v", err)
		}
	}
	px.SetUp(false)
	if err := s.Sample(ctx); err == nil {
		t.Fatal("Sample through a closed proxy succeeded")
	}
	h := s.History()
	want := map[string]float64{StateOK: 1, StatePaused: 1, StateMissing: 1}
	if len(h.States) != len(ChartStates) {
		t.Fatalf("%d state series, want %d: %+v", len(h.States), len(ChartStates), h.States)
	}
	for i, sr := range h.States {
		if sr.Name != ChartStates[i] {
			t.Errorf("series %d is %s, want %s", i, sr.Name, ChartStates[i])
		}
		if len(sr.Points) != 2 {
			t.Errorf("%s has %d points, want 2 (the failed sample adds none)", sr.Name, len(sr.Points))
			continue
		}
		if got := sr.Points[1].V; got != want[sr.Name] {
			t.Errorf("%s = %v instances, want %v", sr.Name, got, want[sr.Name])
		}
	}
}
