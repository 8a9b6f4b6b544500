package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
)

// RelayConfig configures a Relay. Broker is required; the zero value of
// every other field is its default.
type RelayConfig struct {
	// Broker publishes the outbox's messages (Publish: confirmed before
	// it returns). Required.
	Broker broker.Broker
	// Batch is the most messages read, published and deleted in one
	// round. 1 to 10000; default DefaultRelayBatch.
	Batch int
	// BatchBytes bounds the bytes (values, keys and headers) of a round:
	// a round ends with the message that passes it (one message larger
	// than it is a round of its own), so that the relay's memory does not
	// grow with the messages' size. Default DefaultRelayBatchBytes; >= 0.
	BatchBytes int
	// PollInterval is how often the relay looks for messages when no
	// commit woke it (LISTEN/NOTIFY wakes it within milliseconds; polling
	// is the fallback, e.g. for a NOTIFY lost with a connection). Default
	// DefaultPollInterval; at least 10ms.
	PollInterval time.Duration
	// RebalanceInterval is how often the relay counts the relays sharing
	// the outbox and takes or gives back shards for its fair share.
	// Default DefaultRebalanceInterval; at least 10ms.
	RebalanceInterval time.Duration
	// Logger; default the store's.
	Logger *slog.Logger
}

// Defaults of RelayConfig.
const (
	DefaultRelayBatch        = 500
	DefaultRelayBatchBytes   = 4 << 20
	DefaultPollInterval      = time.Second
	DefaultRebalanceInterval = 2 * time.Second
)

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c RelayConfig) Validate() error {
	switch {
	case c.Broker == nil:
		return errors.New("exactlyonce: RelayConfig.Broker: required")
	case c.Batch < 0 || c.Batch > 10000:
		return fmt.Errorf("exactlyonce: RelayConfig.Batch: must be 0 (default) to 10000, got %d", c.Batch)
	case c.BatchBytes < 0:
		return fmt.Errorf("exactlyonce: RelayConfig.BatchBytes: must be >= 0, got %d", c.BatchBytes)
	case c.PollInterval != 0 && c.PollInterval < 10*time.Millisecond:
		return fmt.Errorf("exactlyonce: RelayConfig.PollInterval: must be at least 10ms, got %s", c.PollInterval)
	case c.RebalanceInterval != 0 && c.RebalanceInterval < 10*time.Millisecond:
		return fmt.Errorf("exactlyonce: RelayConfig.RebalanceInterval: must be at least 10ms, got %s", c.RebalanceInterval)
	}
	return nil
}

// Relay publishes the outbox's committed messages. Several relays (in one
// process or in many: one per worker process, or the replicas of redrive
// serve) share the outbox: each owns a fair share of its Shards, a
// message's shard being a hash of its topic and key, so that one relay at
// a time publishes a key's messages, in order. A relay that dies (its
// database session ends) frees its shards at once; the others take them at
// their next rebalance.
type Relay struct {
	s     *Store
	cfg   RelayConfig
	log   *slog.Logger
	owned atomic.Int32 // shards owned now
}

// Shards is how many of the outbox's Shards the relay owns now (0 while
// it has no database session, or is a standby: more relays than shards).
func (r *Relay) Shards() int { return int(r.owned.Load()) }

// NewRelay returns a relay of the store's outbox configured by cfg.
func (s *Store) NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultRelayBatch
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = DefaultRelayBatchBytes
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.RebalanceInterval == 0 {
		cfg.RebalanceInterval = DefaultRebalanceInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	return &Relay{s: s, cfg: cfg, log: cfg.Logger}, nil
}

// Run publishes the outbox until ctx ends, then returns nil. A lost
// database session (PostgreSQL restarted, a network cut) frees its shards
// and is opened again with back-off; a broker that refuses a topic's
// messages holds that topic (its messages stay, in order) and retries it
// with back-off while the other topics flow.
func (r *Relay) Run(ctx context.Context) error {
	wait := minBackoff
	for ctx.Err() == nil {
		start := time.Now()
		err := r.session(ctx)
		if ctx.Err() != nil {
			break
		}
		if time.Since(start) > maxBackoff {
			wait = minBackoff // it ran a while: not a tight loop
		}
		r.log.Warn("exactlyonce: relay: database session ended; opening another", "schema", r.s.cfg.Schema, "error", err, "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
	return nil
}

// Back-off bounds of a lost session and of a topic the broker refused.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// session is one database session of the relay: a connection of its own
// that listens for commits and holds the relay's membership and shard
// locks (session advisory locks, released with it), and the rounds of
// publishing until it fails or ctx ends.
func (r *Relay) session(ctx context.Context) error {
	pc, err := r.s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	// Its own, out of the pool: it listens, and its locks are the relay's.
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{r.s.sql.channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sh := &shardSet{lk: r.s.locks, conn: conn, owned: map[int16]bool{}}
	defer func() {
		r.s.m.shards.Sub(float64(r.owned.Swap(0)))
	}()
	held := newHolds()
	var rebalanced time.Time
	for ctx.Err() == nil {
		if time.Since(rebalanced) >= r.cfg.RebalanceInterval {
			if err := sh.rebalance(ctx); err != nil {
				return fmt.Errorf("rebalance: %w", err)
			}
			rebalanced = time.Now()
			n := int32(len(sh.owned))
			r.s.m.shards.Add(float64(n - r.owned.Swap(n)))
		}
		if err := r.drain(ctx, sh.list(), held); err != nil {
			return err
		}
		wait := min(r.cfg.PollInterval, r.cfg.RebalanceInterval-time.Since(rebalanced))
		if next, ok := held.next(); ok {
			wait = min(wait, time.Until(next))
		}
		if err := waitNotification(ctx, conn, max(wait, time.Millisecond)); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// waitNotification waits up to d for a NOTIFY on conn (nil also when d
// passed or ctx ended); an error is a broken connection.
func waitNotification(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := conn.WaitForNotification(wctx)
	if err != nil && wctx.Err() == nil {
		return fmt.Errorf("wait for notifications: %w", err)
	}
	return nil
}
