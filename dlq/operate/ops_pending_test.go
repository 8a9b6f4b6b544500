package operate_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// blockingSummaries is a store whose Summaries read the counts, then wait
// for release: an arrival noted meanwhile is not in the snapshot.
type blockingSummaries struct {
	dlq.Store
	read, release chan struct{}
}

func (s *blockingSummaries) Summaries(ctx context.Context) ([]dlq.Summary, error) {
	sums, err := s.Store.Summaries(ctx)
	s.read <- struct{}{}
	<-s.release
	return sums, err
}

// The keeper counts an entry in redrive_dlq_pending as it stores it,
// before worker_dlq_messages_total, so that a scrape never shows an
// arrival the pending gauge does not (the DLQFinancial alert holds from
// the arrival); a refresh whose snapshot predates an arrival keeps it;
// a discard is followed by a refresh at once, not at the next interval.
func TestPendingGaugeFollowsArrivalsAndDecisions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := memstore.New(memstore.Config{})
	defer mem.Close()
	st := &blockingSummaries{Store: mem, read: make(chan struct{}), release: make(chan struct{})}
	const name = "pay.dlq"
	reg := prometheus.NewRegistry()
	const never = time.Duration(1 << 62)
	ops, err := operate.New(operate.Config{Store: st, Logger: slog.New(slog.DiscardHandler), Registerer: reg,
		Policies:        map[string]dlq.Policy{name: {Severity: broker.SeverityCritical}},
		MetricsInterval: never, ArchiveInterval: never, ReconcileInterval: never})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(keeper.Config{Source: noSource{}, Store: mem, Broker: "rabbitmq", Ops: ops, Registerer: reg,
		DLQs: map[string]broker.Severity{name: broker.SeverityCritical}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pending := func() string { return testenv.GaugeSeries(t, reg, operate.MetricPending, "dlq", "severity") }
	keep := func(id string) {
		t.Helper()
		if err := k.Handle(ctx, dlq.DeadLetter{DLQ: name, Identity: id, Entry: dlq.Entry{Reason: "max_retries", OriginalValue: []byte(id)}}); err != nil {
			t.Fatal(err)
		}
	}

	// Before any refresh: the arrival is pending at once.
	keep("a")
	if got := pending(); got != name+"/critical=1" {
		t.Errorf("after an arrival, before any refresh: %q", got)
	}

	// A refresh reads the counts (1), then an arrival is noted, then the
	// refresh sets the gauge: the arrival is kept.
	refreshed := make(chan error, 1)
	go func() { refreshed <- ops.RefreshMetrics(ctx) }()
	<-st.read
	keep("b")
	close(st.release)
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
	if got := pending(); got != name+"/critical=2" {
		t.Errorf("after a refresh that began before an arrival: %q, want 2", got)
	}

	// A discard refreshes the gauge at once (Run), not at the next
	// MetricsInterval (never here).
	done := make(chan error, 1)
	go func() { done <- ops.Run(ctx) }()
	<-st.read // Run's first refresh, before the discards
	go func() {
		for range st.read {
		}
	}()
	defer close(st.read)
	page, err := mem.List(ctx, dlq.Query{DLQ: name})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		if _, err := ops.Discard(ctx, name, r.ID, "op", "resolved"); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, "redrive_dlq_pending 0 after the discards", func() bool { return pending() == name+"/critical=0" })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// noSource is a Source the test never runs.
type noSource struct{}

func (noSource) ConsumeDeadLetters(context.Context, []string, func(context.Context, dlq.DeadLetter) error) error {
	return nil
}
