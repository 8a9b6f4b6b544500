package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

// drain publishes the owned shards' messages, a batch at a time in seq
// order, until a batch is not full (the outbox is drained, or what is
// left waits for a held topic). It overlaps the database and the broker:
// while a batch is published, the batch before it is deleted and the next
// one read (excluding the seqs in flight); so a message is deleted one
// batch after its confirm (a crash in between publishes it again, with
// its id). A topic whose Publish failed is held: its rows of the batch
// read meanwhile are dropped from it, so that none overtakes the held
// ones.
func (r *Relay) drain(ctx context.Context, shards []int16, held *holds) error {
	if len(shards) == 0 {
		return nil
	}
	batch, err := r.fetch(ctx, shards, held.topics(), nil)
	if err != nil {
		return err
	}
	var sent []int64 // confirmed, not yet deleted
	type fetched struct {
		rows []row
		err  error
	}
	next := make(chan fetched, 1)
	for len(batch) > 0 && ctx.Err() == nil {
		full := len(batch) == r.cfg.Batch
		del, inflight, holding := sent, seqs(batch), held.topics()
		go func() {
			err := r.remove(ctx, del)
			var rows []row
			if err == nil && full {
				rows, err = r.fetch(ctx, shards, holding, inflight)
			}
			next <- fetched{rows, err}
		}()
		sent = r.publish(ctx, batch, held)
		f := <-next
		if f.err != nil {
			return f.err
		}
		if !full {
			break
		}
		batch = slices.DeleteFunc(f.rows, func(x row) bool { return held.isHeld(x.topic) })
	}
	return r.remove(ctx, sent)
}

// row is one outbox row.
type row struct {
	seq            int64
	topic          string
	key            []byte
	id             string
	value, headers []byte
	ts, writtenAt  time.Time
}

func seqs(batch []row) []int64 {
	out := make([]int64, len(batch))
	for i, x := range batch {
		out[i] = x.seq
	}
	return out
}

// fetch reads up to a batch of the shards' messages in seq order, but
// those of the held topics and the seqs in flight.
func (r *Relay) fetch(ctx context.Context, shards []int16, held []string, inflight []int64) ([]row, error) {
	if inflight == nil {
		inflight = []int64{}
	}
	rows, err := r.s.pool.Query(ctx, r.s.sql.fetch, shards, held, inflight, r.cfg.Batch)
	if err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	batch, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var x row
		err := cr.Scan(&x.seq, &x.topic, &x.key, &x.id, &x.value, &x.headers, &x.ts, &x.writtenAt)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the outbox: %w", err)
	}
	return batch, nil
}

// publish publishes a batch, each topic's rows with one Broker.Publish,
// and returns the seqs confirmed; a topic whose Publish fails is held.
func (r *Relay) publish(ctx context.Context, batch []row, held *holds) []int64 {
	var sent []int64
	for _, t := range byTopic(batch) {
		msgs := make([]broker.Message, len(t.rows))
		for i, x := range t.rows {
			h, err := decodeHeaders(x.headers)
			if err != nil { // written by Publish, so never; kept, not lost
				r.log.Error("exactlyonce: relay: unreadable headers; the topic is held", "topic", t.topic, "id", x.id, "error", err)
				held.hold(t.topic)
				msgs = nil
				break
			}
			msgs[i] = broker.Message{ID: x.id, Key: x.key, Value: x.value, Headers: h, Timestamp: x.ts}
		}
		if msgs == nil {
			continue
		}
		if err := r.cfg.Broker.Publish(ctx, t.topic, msgs...); err != nil {
			if ctx.Err() != nil {
				break
			}
			r.s.m.errors.Inc()
			wait := held.hold(t.topic)
			r.log.Warn("exactlyonce: relay: publish failed; the topic's messages wait and are published again",
				"topic", t.topic, "messages", len(msgs), "error", err, "in", wait)
			continue
		}
		held.release(t.topic)
		now := time.Now()
		for _, x := range t.rows {
			sent = append(sent, x.seq)
			r.s.m.lag.Observe(max(now.Sub(x.writtenAt).Seconds(), 0))
		}
		r.s.m.published.Add(float64(len(t.rows)))
	}
	return sent
}

// remove deletes the rows of confirmed messages. Should it fail (or the
// process die first), they are published again, with their ids.
func (r *Relay) remove(ctx context.Context, sent []int64) error {
	if len(sent) == 0 {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := r.s.pool.Exec(dctx, r.s.sql.remove, sent); err != nil {
		return fmt.Errorf("delete %d published message(s): %w", len(sent), err)
	}
	return nil
}

// topicRows are the rows of one topic, in order.
type topicRows struct {
	topic string
	rows  []row
}

// byTopic splits a batch by topic, each in the batch's order (the
// order per topic and key is what counts; topics are independent).
func byTopic(batch []row) []topicRows {
	var out []topicRows
	at := map[string]int{}
	for _, x := range batch {
		i, ok := at[x.topic]
		if !ok {
			i = len(out)
			at[x.topic] = i
			out = append(out, topicRows{topic: x.topic})
		}
		out[i].rows = append(out[i].rows, x)
	}
	return out
}

// holds are the topics whose Publish failed, each until its next try.
type holds struct {
	until map[string]time.Time
	wait  map[string]time.Duration
}

func newHolds() *holds {
	return &holds{until: map[string]time.Time{}, wait: map[string]time.Duration{}}
}

// hold holds topic for its next back-off and returns it.
func (h *holds) hold(topic string) time.Duration {
	w := h.wait[topic]
	if w == 0 {
		w = minBackoff
	} else {
		w = min(2*w, maxBackoff)
	}
	h.wait[topic], h.until[topic] = w, time.Now().Add(w)
	return w
}

// release forgets topic's failures.
func (h *holds) release(topic string) {
	delete(h.wait, topic)
	delete(h.until, topic)
}

// isHeld reports whether topic is held now.
func (h *holds) isHeld(topic string) bool { return time.Now().Before(h.until[topic]) }

// topics are the topics held now (those whose back-off passed are tried
// again).
func (h *holds) topics() []string {
	now := time.Now()
	out := []string{}
	for t, u := range h.until {
		if now.Before(u) {
			out = append(out, t)
		}
	}
	return out
}

// next is when the first held topic may be tried again.
func (h *holds) next() (time.Time, bool) {
	var first time.Time
	now := time.Now()
	for _, u := range h.until {
		if u.After(now) && (first.IsZero() || u.Before(first)) {
			first = u
		}
	}
	return first, !first.IsZero()
}
