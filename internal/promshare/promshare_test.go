package promshare_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/internal/promshare"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	first, err := promshare.Register(reg, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	second, err := promshare.Register(reg, prometheus.NewCounter(opts))
	if err != nil || second != first {
		t.Fatalf("second registration = %v, %v; want the first's collector", second, err)
	}
	// The same name with other labels is a conflict, not a share.
	if _, err := promshare.Register(reg, prometheus.NewCounterVec(opts, []string{"l"})); err == nil {
		t.Fatal("a conflicting collector was accepted")
	}
}
