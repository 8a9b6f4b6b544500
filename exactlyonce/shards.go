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
// together converge within a few rebalances.
func (s *shardSet) rebalance(ctx context.Context) error {
	if !s.member {
		for slot := range Shards {
			ok, err := s.try(ctx, s.lk.members, int32(slot))
			if err != nil {
				return err
			}
			if ok {
				s.member = true
				break
			}
		}
		if !s.member {
			return nil // more relays than shards: a standby
		}
	}
	var n int
	if err := s.conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		int64(uint32(s.lk.members))).Scan(&n); err != nil {
		return err
	}
	fair := (Shards + max(n, 1) - 1) / max(n, 1)
	for _, sh := range slices.Backward(s.list()) {
		if len(s.owned) <= fair {
			break
		}
		if _, err := s.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, s.lk.shards, int32(sh)); err != nil {
			return err
		}
		delete(s.owned, sh)
	}
	start := rand.IntN(Shards) // relays starting together try different shards first
	for i := 0; i < Shards && len(s.owned) < fair; i++ {
		sh := int16((start + i) % Shards)
		if s.owned[sh] {
			continue
		}
		ok, err := s.try(ctx, s.lk.shards, int32(sh))
		if err != nil {
			return err
		}
		if ok {
			s.owned[sh] = true
		}
	}
	return nil
}

// try takes the session lock (k1, k2) unless another session holds it.
func (s *shardSet) try(ctx context.Context, k1, k2 int32) (bool, error) {
	var ok bool
	err := s.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, k1, k2).Scan(&ok)
	return ok, err
}
