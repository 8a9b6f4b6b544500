package exporter

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func TestDLQSampler(t *testing.T) {
	var infos []operate.DLQInfo
	var err error
	s := NewDLQSampler(func(context.Context) ([]operate.DLQInfo, error) { return infos, err }, DLQSamplerConfig{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)

	// Not ready: nothing sampled, nothing kept.
	err = ErrNotReady
	if got := s.Sample(context.Background()); !errors.Is(got, ErrNotReady) {
		t.Fatalf("Sample = %v, want ErrNotReady", got)
	}
	if p, at, lastErr := s.Last(); p != nil || !at.IsZero() || lastErr != nil {
		t.Errorf("after a not-ready sample: Last = %v %v %v, want nothing", p, at, lastErr)
	}

	infos, err = []operate.DLQInfo{{Summary: dlq.Summary{DLQ: "a.dlq", Severity: "critical", Pending: 3, Replayed: 9}},
		{Summary: dlq.Summary{DLQ: "b.dlq", Severity: "warning"}}}, nil
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, at, lastErr := s.Last(); len(p) != 2 || p["a.dlq"] != 3 || p["b.dlq"] != 0 || at.IsZero() || lastErr != nil {
		t.Errorf("Last = %v %v %v, want a.dlq 3, b.dlq 0", p, at, lastErr)
	}
	if got := testenv.GaugeSeries(t, reg, operate.MetricPending, "dlq", "severity"); got != "a.dlq/critical=3 b.dlq/warning=0" {
		t.Errorf("redrive_dlq_pending = %q, want a.dlq/critical=3 b.dlq/warning=0", got)
	}

	// The store fails: the counts are withheld, not left stale.
	infos, err = nil, errors.New("pg down")
	_ = s.Sample(context.Background())
	if p, at, lastErr := s.Last(); p != nil || at.IsZero() || lastErr == nil {
		t.Errorf("after a failed sample: Last = %v %v %v, want no counts and the error", p, at, lastErr)
	}
	if got := testenv.GaugeSeries(t, reg, operate.MetricPending, "dlq", "severity"); got != "" {
		t.Errorf("redrive_dlq_pending after a failed sample = %q, want no series", got)
	}
}
