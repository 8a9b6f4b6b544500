package claims

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// dtoMetric reads a counter's value.
type dtoMetric struct{ m dto.Metric }

func (d *dtoMetric) read(c prometheus.Counter) float64 {
	if err := c.Write(&d.m); err != nil {
		return 0
	}
	return d.m.GetCounter().GetValue()
}
