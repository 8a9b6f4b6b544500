package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/dlq"
)

// arrivalsSQL counts a window's arrivals by bucket (date_bin from the
// window's start) and fingerprint, live and archived: two range scans of
// the (dlq, received_at) indexes, bounded by the window whatever the
// DLQ's size ($6: one group's only). It returns the totals per bucket (top false) and the
// counts of the $5 groups with the most arrivals (top true).
const arrivalsSQL = `WITH e AS (
		SELECT fingerprint, received_at FROM dlq_entries
			WHERE dlq = $1 AND received_at >= $2 AND received_at < $4 AND ($6 = '' OR fingerprint = $6)
		UNION ALL
		SELECT fingerprint, received_at FROM dlq_entries_archive
			WHERE dlq = $1 AND received_at >= $2 AND received_at < $4 AND ($6 = '' OR fingerprint = $6)
	), b AS (
		SELECT fingerprint, date_bin($3::interval, received_at, $2) AS t, count(*) AS n FROM e GROUP BY 1, 2
	), top AS (
		SELECT fingerprint FROM b GROUP BY 1 ORDER BY sum(n) DESC, fingerprint LIMIT $5
	)
	SELECT false, '', t, sum(n)::bigint FROM b GROUP BY t
	UNION ALL
	SELECT true, b.fingerprint, b.t, b.n FROM b JOIN top USING (fingerprint)`

// Arrivals implements dlq.Store with arrivalsSQL.
func (s *Store) Arrivals(ctx context.Context, q dlq.ArrivalsQuery) (dlq.Arrivals, error) {
	if err := q.Validate(); err != nil {
		return dlq.Arrivals{}, fmt.Errorf("pgstore: arrivals: %w", err)
	}
	rows, err := s.pool.Query(ctx, arrivalsSQL, q.DLQ, q.Since, q.Step, q.Until(), q.Groups, q.Group)
	if err != nil {
		return dlq.Arrivals{}, fmt.Errorf("pgstore: arrivals of %q: %w", q.DLQ, err)
	}
	a := dlq.NewArrivals(q)
	byGroup := map[string][]int64{}
	var (
		top bool
		fp  string
		t   time.Time
		n   int64
	)
	_, err = pgx.ForEachRow(rows, []any{&top, &fp, &t, &n}, func() error {
		i, ok := q.Bucket(t)
		if !ok {
			return nil
		}
		if !top {
			a.Counts[i] += n
			return nil
		}
		g := byGroup[fp]
		if g == nil {
			g = make([]int64, q.Buckets)
			byGroup[fp] = g
		}
		g[i] += n
		return nil
	})
	if err != nil {
		return dlq.Arrivals{}, fmt.Errorf("pgstore: arrivals of %q: %w", q.DLQ, err)
	}
	a.AddGroups(byGroup)
	return a, nil
}
