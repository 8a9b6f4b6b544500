package memstore

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/dlq"
)

// Arrivals implements dlq.Store: one pass over the records (the embedded
// store holds few).
func (s *Store) Arrivals(ctx context.Context, q dlq.ArrivalsQuery) (dlq.Arrivals, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Arrivals{}, err
	}
	if err := q.Validate(); err != nil {
		return dlq.Arrivals{}, fmt.Errorf("memstore: arrivals: %w", err)
	}
	if err := s.lock(); err != nil {
		return dlq.Arrivals{}, err
	}
	defer s.mu.Unlock()
	a := dlq.NewArrivals(q)
	byGroup := map[string][]int64{}
	for _, n := range s.recs {
		r := &n.r
		if r.DLQ != q.DLQ || q.Group != "" && r.Fingerprint != q.Group {
			continue
		}
		i, ok := q.Bucket(r.ReceivedAt)
		if !ok {
			continue
		}
		a.Counts[i]++
		if q.Groups > 0 {
			g := byGroup[r.Fingerprint]
			if g == nil {
				g = make([]int64, q.Buckets)
				byGroup[r.Fingerprint] = g
			}
			g[i]++
		}
	}
	a.AddGroups(byGroup)
	return a, nil
}
