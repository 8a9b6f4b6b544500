// Package sampling is the loop of redrive's samplers: take a sample now
// and then on an interval, each bounded by a timeout, and log a failing
// source once per outage (when it starts failing and when it recovers),
// not on every attempt. heartbeat.Sampler, lag.Sampler and the exporter's
// DLQSampler run on Loop; heartbeat.Publisher and lag.Sampler keep their
// outage state in an Outage.
package sampling

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Outage tracks whether a source is failing, so that its failure is
// reported when an outage begins and its recovery when it ends. The zero
// value is a source that works; it is safe for concurrent use.
type Outage struct{ down atomic.Bool }

// Observe records the result of one attempt: began reports that err
// starts an outage, ended that a nil err ends one. A context.Canceled err
// is the caller stopping, not an outage: it changes nothing.
func (o *Outage) Observe(err error) (began, ended bool) {
	switch {
	case err == nil:
		return false, o.down.CompareAndSwap(true, false)
	case errors.Is(err, context.Canceled):
		return false, false
	}
	return o.down.CompareAndSwap(false, true), false
}

// Down reports whether an outage is under way.
func (o *Outage) Down() bool { return o.down.Load() }

// Loop takes a sample now and then every Interval until its context
// ends, reporting the start and the end of each outage once.
type Loop struct {
	// Interval is the time between samples; it must be positive.
	Interval time.Duration
	// Timeout bounds one sample; default Interval.
	Timeout time.Duration
	// Sample takes one sample.
	Sample func(ctx context.Context) error
	// Ignore, when set, names errors that are neither an outage nor a
	// recovery (a source not ready yet); context.Canceled always is.
	Ignore func(error) bool
	// Down is called with the error of the first failed sample of an
	// outage; nil: nothing is reported.
	Down func(err error)
	// Up is called on the first good sample after an outage; nil:
	// nothing is reported.
	Up func()
}

// Run samples now and then every Interval until ctx ends, and returns nil
// then. A sample cut short by the end of ctx is not observed.
func (l Loop) Run(ctx context.Context) error {
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = l.Interval
	}
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	var o Outage
	for {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		err := l.Sample(sctx)
		cancel()
		if ctx.Err() == nil && (err == nil || l.Ignore == nil || !l.Ignore(err)) {
			switch began, ended := o.Observe(err); {
			case began && l.Down != nil:
				l.Down(err)
			case ended && l.Up != nil:
				l.Up()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
