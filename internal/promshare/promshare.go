// Package promshare registers Prometheus collectors that several
// components of one process share: two worker runtimes, two keepers or
// two relay endpoints on one registry export one family each, not a
// registration error.
package promshare

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it, or the collector of the
// same description registered before (of the same type), so that every
// component observes into the one the registry gathers. Any other
// registration error is returned as it is, with c.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
