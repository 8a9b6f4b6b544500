package promshare_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/internal/promshare"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	first, err := promshare.Register(reg, prometheus.NewCounterVec(opts, []string{"a"}))
	if err != nil {
		t.Fatal(err)
	}
	second, err := promshare.Register(reg, prometheus.NewCounterVec(opts, []string{"a"}))
	if err != nil || second != first {
		t.Fatalf("second Register = %p, %v; want the first collector %p", second, err, first)
	}
	second.WithLabelValues("v").Inc()
	if got := testutilValue(t, reg); got != 1 {
		t.Fatalf("gathered %v, want the shared counter's 1", got)
	}
	// Another shape under the same name is an error, not a share.
	if _, err := promshare.Register(reg, prometheus.NewCounterVec(opts, []string{"b"})); err == nil {
		t.Fatal("a collector of another shape was shared")
	}
}

func testutilValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil || len(fams) != 1 || len(fams[0].GetMetric()) != 1 {
		t.Fatalf("gather: %v %v", fams, err)
	}
	return fams[0].GetMetric()[0].GetCounter().GetValue()
}
