package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// Groups implements dlq.Store in one pass over the DLQ's entries (an
// index-only scan of dlq_entries_fingerprint): counts by fingerprint and
// hour of arrival (width_bucket over the sparkline's hour boundaries, 0
// before them), merged into groups here, then the sample row of each
// group returned, read by its seq.
func (s *Store) Groups(ctx context.Context, q dlq.GroupQuery) ([]dlq.Group, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: groups: %w", err)
	}
	now := q.Now
	if now.IsZero() {
		now = s.now()
	}
	start := dlq.SparklineStart(now)
	bounds := make([]time.Time, dlq.SparklineHours+1)
	for i := range bounds {
		bounds[i] = start.Add(time.Duration(i) * time.Hour)
	}
	rows, err := s.pool.Query(ctx, `SELECT fingerprint, width_bucket(received_at, $2::timestamptz[]), count(*),
			count(*) FILTER (WHERE status = 'pending'), min(received_at), max(received_at), max(seq)
		FROM dlq_entries WHERE dlq = $1 GROUP BY 1, 2`, q.DLQ, bounds)
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: %w", q.DLQ, err)
	}
	type acc struct {
		g   dlq.Group
		seq int64
	}
	byFP := map[string]*acc{}
	var (
		fp                 string
		bucket             int
		n, pending, maxSeq int64
		first, last        time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&fp, &bucket, &n, &pending, &first, &last, &maxSeq}, func() error {
		a := byFP[fp]
		if a == nil {
			a = &acc{g: dlq.Group{Fingerprint: fp, FirstSeen: first.UTC(), LastSeen: last.UTC()}, seq: maxSeq}
			byFP[fp] = a
		}
		a.g.Count += n
		a.g.Pending += pending
		if first.Before(a.g.FirstSeen) {
			a.g.FirstSeen = first.UTC()
		}
		if last.After(a.g.LastSeen) {
			a.g.LastSeen = last.UTC()
		}
		a.seq = max(a.seq, maxSeq)
		if bucket >= 1 && bucket <= dlq.SparklineHours {
			a.g.Hourly[bucket-1] += n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: %w", q.DLQ, err)
	}
	out := make([]dlq.Group, 0, len(byFP))
	sample := make(map[string]int64, len(byFP))
	for fp, a := range byFP {
		out = append(out, a.g)
		sample[fp] = a.seq
	}
	dlq.SortGroups(out)
	if limit := q.GroupLimit(); len(out) > limit {
		out = out[:limit]
	}
	if len(out) == 0 {
		return out, nil
	}
	seqs := make([]int64, len(out))
	at := make(map[int64]int, len(out))
	for i, g := range out {
		seqs[i] = sample[g.Fingerprint]
		at[seqs[i]] = i
	}
	rows, err = s.pool.Query(ctx, `SELECT seq, id, error_class, worker, left(error_message, `+strconv.Itoa(dlq.ListedErrorLen)+`)
		FROM dlq_entries WHERE seq = ANY($1)`, seqs)
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: samples: %w", q.DLQ, err)
	}
	var seq int64
	var id, class, worker, msg string
	_, err = pgx.ForEachRow(rows, []any{&seq, &id, &class, &worker, &msg}, func() error {
		if i, ok := at[seq]; ok {
			out[i].SampleID, out[i].ErrorClass, out[i].Worker, out[i].Message = id, class, worker, dlq.NormalizeMessage(msg)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: samples: %w", q.DLQ, err)
	}
	return out, nil
}
