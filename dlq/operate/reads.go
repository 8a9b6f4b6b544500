package operate

import (
	"context"
	"fmt"
	"github.com/redrive/redrive/dlq"
)

// Groups returns the failure groups of q.DLQ (Store.Groups).
func (o *Ops) Groups(ctx context.Context, q dlq.GroupQuery) ([]dlq.Group, error) {
	if q.Now.IsZero() {
		q.Now = o.now()
	}
	gs, err := o.store.Groups(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("dlq: groups of %s: %w", q.DLQ, err)
	}
	return gs, nil
}

// Arrivals counts the arrivals of q.DLQ (Store.Arrivals).
func (o *Ops) Arrivals(ctx context.Context, q dlq.ArrivalsQuery) (dlq.Arrivals, error) {
	a, err := o.store.Arrivals(ctx, q)
	if err != nil {
		return dlq.Arrivals{}, fmt.Errorf("dlq: arrivals of %s: %w", q.DLQ, err)
	}
	return a, nil
}
