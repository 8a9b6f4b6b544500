package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redrive/redrive/dlq"
)

// matches reports whether r is selected by q, cursor aside.
func matches(r *dlq.Record, q *dlq.Query) bool {
	switch {
	case q.DLQ != "" && r.DLQ != q.DLQ:
		return false
	case q.Status == "" && r.Status == dlq.StatusArchived:
		return false
	case q.Status != "" && r.Status != q.Status:
		return false
	case q.ErrorClass != "" && r.Entry.ErrorClass != dlq.CleanText(q.ErrorClass):
		return false
	case q.Group != "" && r.Fingerprint != q.Group:
		return false
	case !q.Since.IsZero() && r.ReceivedAt.Before(q.Since):
		return false
	case !q.Until.IsZero() && !r.ReceivedAt.Before(q.Until):
		return false
	case q.Text != "" && !strings.Contains(strings.ToLower(r.Entry.ErrorMessage), strings.ToLower(dlq.CleanText(q.Text))):
		return false
	}
	return true
}

// List implements dlq.Store.
func (s *Store) List(ctx context.Context, q dlq.Query) (dlq.Page, error) {
	if err := ctx.Err(); err != nil {
		return dlq.Page{}, err
	}
	if err := q.Validate(); err != nil {
		return dlq.Page{}, fmt.Errorf("memstore: list: %w", err)
	}
	var after int64 = -1
	if q.Cursor != "" {
		c, _ := dlq.DecodeCursor(q.Cursor) // validated
		after = c.After
	}
	limit := q.PageLimit()
	if err := s.lock(); err != nil {
		return dlq.Page{}, err
	}
	defer s.mu.Unlock()
	var page dlq.Page
	var last int64
	take := func(n *rec) bool {
		if !matches(&n.r, &q) {
			return true
		}
		if len(page.Records) == limit {
			page.Next = dlq.Cursor{After: last, NewestFirst: q.NewestFirst}.Encode()
			return false
		}
		page.Records = append(page.Records, brief(n.r))
		last = n.seq
		return true
	}
	i, _ := slices.BinarySearchFunc(s.recs, after, func(r *rec, seq int64) int { return cmp.Compare(r.seq, seq) })
	if q.NewestFirst {
		if after < 0 {
			i = len(s.recs)
		}
		for j := i - 1; j >= 0 && take(s.recs[j]); j-- {
		}
	} else {
		if i < len(s.recs) && s.recs[i].seq == after {
			i++
		}
		for j := i; j < len(s.recs) && take(s.recs[j]); j++ {
		}
	}
	return page, nil
}

// Count implements dlq.Store.
func (s *Store) Count(ctx context.Context, q dlq.Query) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	q.Cursor = ""
	if err := q.Validate(); err != nil {
		return 0, fmt.Errorf("memstore: count: %w", err)
	}
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.recs {
		if matches(&r.r, &q) {
			n++
		}
	}
	return n, nil
}

// Summaries implements dlq.Store.
func (s *Store) Summaries(ctx context.Context) ([]dlq.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sums := map[string]*dlq.Summary{}
	live := map[string]bool{}
	for _, n := range s.recs { // ascending: the last record seen is the newest
		r := &n.r
		sum := sums[r.DLQ]
		if sum == nil {
			sum = &dlq.Summary{DLQ: r.DLQ}
			sums[r.DLQ] = sum
		}
		// Broker and severity of the newest live record, else of the
		// newest archived one.
		if r.Status != dlq.StatusArchived {
			live[r.DLQ] = true
			sum.Broker, sum.Severity = string(r.Broker), r.Severity
		} else if !live[r.DLQ] {
			sum.Broker, sum.Severity = string(r.Broker), r.Severity
		}
		if r.ReceivedAt.After(sum.LastReceived) {
			sum.LastReceived = r.ReceivedAt
		}
		switch r.Status {
		case dlq.StatusPending:
			sum.Pending++
			if sum.OldestPending.IsZero() { // the first pending by insertion order, as pgstore
				sum.OldestPending = r.ReceivedAt
			}
		case dlq.StatusReplaying:
			sum.Replaying++
		case dlq.StatusReplayed:
			sum.Replayed++
		case dlq.StatusDiscarded:
			sum.Discarded++
		case dlq.StatusArchived:
			sum.Archived++
		}
	}
	out := make([]dlq.Summary, 0, len(sums))
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		out = append(out, *sums[name])
	}
	return out, nil
}
