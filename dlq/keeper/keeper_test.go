package keeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
)

// nilSource is a Source the test never runs: it calls Handle itself.
type nilSource struct{}

func (nilSource) ConsumeDeadLetters(ctx context.Context, _ []string, _ func(context.Context, dlq.DeadLetter) error) error {
	<-ctx.Done()
	return nil
}

// TestKeeperMetrics: every kept DLQ's counter and latency histogram exist
// at 0 before the first dead letter (a series Prometheus first sees at 1
// is no increase); a stored dead letter counts once, and its processing
// latency is the time from its last failure to its storing.
func TestKeeperMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	now := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
	k, err := keeper.New(keeper.Config{Source: nilSource{}, Store: memstore.New(memstore.Config{}), Broker: "kafka",
		DLQs: map[string]broker.Severity{"pay.dlq": broker.SeverityCritical, "mail.dlq": broker.SeverityWarning}, Registerer: reg,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dlq, sev string }{{"pay.dlq", "critical"}, {"mail.dlq", "warning"}} {
		if v, ok := sample(t, reg, keeper.MetricMessages, tc.dlq, tc.sev); !ok || v.GetCounter().GetValue() != 0 {
			t.Errorf("%s{%s,%s} before any dead letter: %v (present %v), want 0", keeper.MetricMessages, tc.dlq, tc.sev, v, ok)
		}
		if v, ok := sample(t, reg, keeper.MetricProcessing, tc.dlq, tc.sev); !ok || v.GetHistogram().GetSampleCount() != 0 {
			t.Errorf("%s{%s,%s} before any dead letter: %v (present %v), want an empty histogram", keeper.MetricProcessing, tc.dlq, tc.sev, v, ok)
		}
	}
	dl := dlq.DeadLetter{DLQ: "pay.dlq", ID: "0-7", Identity: "0-7@1", Entry: dlq.Entry{OriginalTopic: "pay", OriginalPartition: 0,
		OriginalOffset: 7, Reason: "max_retries", Worker: "payout", LastFailureAt: now.Add(-3 * time.Second)}}
	for range 2 { // a redelivery is stored once, counted once
		if err := k.Handle(t.Context(), dl); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := sample(t, reg, keeper.MetricMessages, "pay.dlq", "critical"); v.GetCounter().GetValue() != 1 {
		t.Errorf("%s{pay.dlq} = %v, want 1", keeper.MetricMessages, v.GetCounter().GetValue())
	}
	h, _ := sample(t, reg, keeper.MetricProcessing, "pay.dlq", "critical")
	if h.GetHistogram().GetSampleCount() != 1 || h.GetHistogram().GetSampleSum() != 3 {
		t.Errorf("%s{pay.dlq} = %d samples, sum %v; want 1 sample of 3 s", keeper.MetricProcessing,
			h.GetHistogram().GetSampleCount(), h.GetHistogram().GetSampleSum())
	}
}

// sample returns the series of name with labels dlq and severity.
func sample(t *testing.T, reg *prometheus.Registry, name, dlqName, sev string) (*dto.Metric, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["dlq"] == dlqName && l["severity"] == sev && len(l) == 2 {
				return m, true
			}
		}
	}
	return nil, false
}
