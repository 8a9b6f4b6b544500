package exactlyonce

import (
	"context"
	"math/rand/v2"
	"slices"

	"github.com/jackc/pgx/v5"
)

// shardSet is the membership and the shards a relay's session holds:
// session advisory locks (two-int form) on the session's connection,
// which PostgreSQL releases when the session ends, however it ends.
type shardSet struct {
	lk     lockSpace
	conn   *pgx.Conn
	member bool // holds a membership slot
	owned  map[int16]bool
}

// list is the owned shards, sorted.
func (s *shardSet) list() []int16 {
	out := make([]int16, 0, len(s.owned))
	for sh := range s.owned {
		out = append(out, sh)
	}
	slices.Sort(out)
	return out
}

// rebalance takes a membership slot if it has none, counts the relays
// holding one (n), and moves the set toward its fair share,
// ceil(Shards / n): above it, it gives back the excess (between rounds,
// so no message of them is in flight); below it, it takes free shards,
// which another relay gave back or a dead one left. Relays that start
// together converge within a few rebalances. Each step is one statement
// (one round trip), however many slots or shards it tries: a relay
// starting on an idle outbox holds its shards after three.
func (s *shardSet) rebalance(ctx context.Context) error {
	if !s.member {
		slots, err := s.take(ctx, s.lk.members, 0, 1)
		if err != nil {
			return err
		}
		if len(slots) == 0 {
			return nil // more relays than shards: a standby
		}
		s.member = true
	}
	// The relays holding a slot, and the shards this session holds (what
	// PostgreSQL says it holds is the truth the set starts from).
	var n int
	var mine []int64
	if err := s.conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = $1 AND database = d.oid),
		(SELECT coalesce(array_agg(objid::int8), '{}') FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = $2 AND database = d.oid AND pid = pg_backend_pid())
		FROM pg_database d WHERE d.datname = current_database()`,
		int64(uint32(s.lk.members)), int64(uint32(s.lk.shards))).Scan(&n, &mine); err != nil {
		return err
	}
	clear(s.owned)
	for _, sh := range mine {
		s.owned[int16(sh)] = true
	}
	fair := (Shards + max(n, 1) - 1) / max(n, 1)
	if excess := len(s.owned) - fair; excess > 0 {
		give := s.list()[len(s.owned)-excess:]
		if _, err := s.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, sh) FROM unnest($2::int4[]) AS sh`, s.lk.shards, give); err != nil {
			return err
		}
		for _, sh := range give {
			delete(s.owned, sh)
		}
	}
	if want := fair - len(s.owned); want > 0 {
		// relays starting together try different shards first
		got, err := s.take(ctx, s.lk.shards, rand.IntN(Shards), want)
		if err != nil {
			return err
		}
		for _, sh := range got {
			s.owned[sh] = true
		}
	}
	return nil
}

// take tries the session locks (k1, k2) for k2 from start to Shards-1,
// then from 0, skipping those held already, and stops after taking up to
// want of them: one statement, whose LIMIT ends the scan (and the tries)
// at the want-th lock taken. It returns the k2 of the locks taken. (Were
// a lock ever taken and not returned, the next rebalance would find it
// in pg_locks and publish its shard.)
func (s *shardSet) take(ctx context.Context, k1 int32, start, want int) ([]int16, error) {
	order := make([]int16, 0, Shards)
	for i := range Shards {
		if sh := int16((start + i) % Shards); k1 != s.lk.shards || !s.owned[sh] {
			order = append(order, sh)
		}
	}
	rows, err := s.conn.Query(ctx, `SELECT k FROM unnest($2::int2[]) AS k WHERE pg_try_advisory_lock($1, k) LIMIT $3`, k1, order, want)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int16])
}
