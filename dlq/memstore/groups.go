package memstore

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/dlq"
)

// Groups implements dlq.Store: one pass over the DLQ's records.
func (s *Store) Groups(ctx context.Context, q dlq.GroupQuery) ([]dlq.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("memstore: groups: %w", err)
	}
	now := q.Now
	if now.IsZero() {
		now = s.opts.Now()
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	byFP := map[string]*dlq.Group{}
	var order []string
	for _, n := range s.recs { // by seq: the last record seen is the newest
		r := &n.r
		if r.DLQ != q.DLQ || r.Status == dlq.StatusArchived {
			continue
		}
		g := byFP[r.Fingerprint]
		if g == nil {
			g = &dlq.Group{Fingerprint: r.Fingerprint, Message: dlq.NormalizeMessage(r.Entry.ErrorMessage),
				ErrorClass: r.Entry.ErrorClass, Worker: r.Entry.Worker, FirstSeen: r.ReceivedAt}
			byFP[r.Fingerprint] = g
			order = append(order, r.Fingerprint)
		}
		g.Count++
		if r.Status == dlq.StatusPending {
			g.Pending++
		}
		if r.ReceivedAt.Before(g.FirstSeen) {
			g.FirstSeen = r.ReceivedAt
		}
		if r.ReceivedAt.After(g.LastSeen) {
			g.LastSeen = r.ReceivedAt
		}
		g.SampleID = r.ID
		if i, ok := dlq.HourOf(r.ReceivedAt, now); ok {
			g.Hourly[i]++
		}
	}
	out := make([]dlq.Group, 0, len(order))
	for _, fp := range order {
		out = append(out, *byFP[fp])
	}
	dlq.SortGroups(out)
	if limit := q.GroupLimit(); len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
