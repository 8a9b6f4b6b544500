package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// Groups implements dlq.Store: one aggregate over the DLQ's entries by
// fingerprint (an index-only scan of dlq_entries_fingerprint), the sample
// row of each group read by its seq, then the arrivals of the groups'
// last hours (the same index, the DLQ's newest entries).
func (s *Store) Groups(ctx context.Context, q dlq.GroupQuery) ([]dlq.Group, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: groups: %w", err)
	}
	now := q.Now
	if now.IsZero() {
		now = s.now()
	}
	rows, err := s.pool.Query(ctx, `WITH g AS (
			SELECT fingerprint, count(*) AS n, count(*) FILTER (WHERE status = 'pending') AS pending,
				min(received_at) AS first, max(received_at) AS last, max(seq) AS sample
			FROM dlq_entries WHERE dlq = $1 GROUP BY fingerprint
			ORDER BY pending DESC, n DESC, last DESC, fingerprint LIMIT $2)
		SELECT g.fingerprint, g.n, g.pending, g.first, g.last, e.id, e.error_class, e.worker,
			left(e.error_message, `+strconv.Itoa(dlq.ListedErrorLen)+`)
		FROM g JOIN dlq_entries e ON e.seq = g.sample
		ORDER BY g.pending DESC, g.n DESC, g.last DESC, g.fingerprint`, q.DLQ, q.GroupLimit())
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: %w", q.DLQ, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dlq.Group, error) {
		var g dlq.Group
		var msg string
		err := row.Scan(&g.Fingerprint, &g.Count, &g.Pending, &g.FirstSeen, &g.LastSeen, &g.SampleID, &g.ErrorClass, &g.Worker, &msg)
		g.FirstSeen, g.LastSeen, g.Message = g.FirstSeen.UTC(), g.LastSeen.UTC(), dlq.NormalizeMessage(msg)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: %w", q.DLQ, err)
	}
	if len(out) == 0 {
		return out, nil
	}
	index := make(map[string]int, len(out))
	fps := make([]string, len(out))
	for i, g := range out {
		index[g.Fingerprint], fps[i] = i, g.Fingerprint
	}
	start := dlq.SparklineStart(now)
	rows, err = s.pool.Query(ctx, `SELECT fingerprint, floor(extract(epoch FROM received_at - $3) / 3600)::int AS hour, count(*)
		FROM dlq_entries WHERE dlq = $1 AND fingerprint = ANY($2) AND received_at >= $3 AND received_at < $4
		GROUP BY 1, 2`, q.DLQ, fps, start, start.Add(dlq.SparklineHours*time.Hour))
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: arrivals: %w", q.DLQ, err)
	}
	var fp string
	var hour int
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&fp, &hour, &n}, func() error {
		if i, ok := index[fp]; ok && hour >= 0 && hour < dlq.SparklineHours {
			out[i].Hourly[hour] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: groups of %q: arrivals: %w", q.DLQ, err)
	}
	return out, nil
}
