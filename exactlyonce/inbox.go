package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/broker"
)

// Handler handles one delivery inside tx, the inbox's transaction: every
// change it makes through tx (its effects, and what it publishes with
// Store.Publish) commits with the inbox's record of the message, or not
// at all. It must not commit or roll back tx. Its error means what a
// broker.Handler's does (nil = done; broker.Permanent, broker.RetryAfter,
// broker.Requeue, any other = retry by policy); on an error tx is rolled
// back, record included, so that the retry runs the handler again.
type Handler func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error

// InboxConfig configures an Inbox. The zero value is the default.
type InboxConfig struct {
	// Name is what the inbox records a handled message under, with its
	// key: a message is handled once per name. Default "": the
	// delivery's group (the worker), so that each worker of a topic
	// handles each message once. Two inboxes of one name share their
	// records.
	Name string
	// Key returns the key of a delivery, what makes two deliveries the
	// same message. Default Delivery.StableID: the message id redrive
	// keeps across redeliveries, retries and replays; for messages of
	// producers that are not redrive, the AMQP message-id property, else
	// a digest of the message's content (RabbitMQ), or the Kafka record's
	// topic, partition, offset and timestamp (see docs/exactly-once.md).
	// A key that is empty fails the delivery as broker.Permanent
	// (ErrNoKey); one longer than 200 bytes, or not UTF-8, is stored as
	// its digest.
	Key func(*broker.Delivery) string
	// IsoLevel of the transaction: pgx.ReadCommitted (the default when
	// empty) or pgx.Serializable. pgx.RepeatableRead is refused: its
	// snapshot would be taken before the inbox's lock is granted, and two
	// concurrent deliveries of one message on either side of midnight
	// could both miss each other's record.
	IsoLevel pgx.TxIsoLevel
}

// Validate returns nil when c is usable, else an error naming the first
// field that is not.
func (c InboxConfig) Validate() error {
	switch c.IsoLevel {
	case "", pgx.ReadCommitted, pgx.Serializable:
		return nil
	}
	return fmt.Errorf("exactlyonce: InboxConfig.IsoLevel: must be %q or %q, got %q", pgx.ReadCommitted, pgx.Serializable, c.IsoLevel)
}

// ErrNoKey is the error (wrapped in broker.Permanent) of a delivery whose
// key (InboxConfig.Key) is empty: the inbox cannot tell it from another.
var ErrNoKey = errors.New("exactlyonce: the delivery has no key (message id)")

// Inbox runs handlers inside a transaction that records each message
// handled, so that a message is handled once per name however often it is
// delivered. Safe for concurrent use.
type Inbox struct {
	s   *Store
	cfg InboxConfig
}

// Inbox returns an inbox of the store configured by cfg.
func (s *Store) Inbox(cfg InboxConfig) (*Inbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Key == nil {
		cfg.Key = (*broker.Delivery).StableID
	}
	if cfg.IsoLevel == "" {
		cfg.IsoLevel = pgx.ReadCommitted
	}
	return &Inbox{s: s, cfg: cfg}, nil
}

// Handler returns h as a broker.Handler: for each delivery it begins a
// transaction, records (name, key) unless it is recorded, calls h with the
// transaction, and commits; the handler returns (and the broker
// acknowledges) only after the commit. A delivery whose key is recorded
// (its transaction committed before) is acknowledged without calling h:
// counted in redrive_inbox_duplicates_total and logged at debug. Two
// deliveries of one message at once wait for each other (a transaction
// lock on the key): one runs h, the other finds it recorded or, if the
// first rolled back, runs h itself.
func (in *Inbox) Handler(h Handler) broker.Handler {
	return func(ctx context.Context, d *broker.Delivery) error {
		name := in.cfg.Name
		if name == "" {
			name = d.Group
		}
		key := in.cfg.Key(d)
		if key == "" {
			return broker.Permanent(fmt.Errorf("%w: worker %s, topic %s", ErrNoKey, name, d.Topic))
		}
		return in.run(ctx, name, key, func(tx pgx.Tx) error { return h(ctx, tx, d) }, func() {
			in.s.log.Debug("exactlyonce: duplicate delivery acknowledged without the handler",
				"worker", name, "key", key, "topic", d.Topic, "attempt", d.Attempt, "redelivered", d.Redelivered)
		})
	}
}

// run is one inbox transaction: begin, claim (name, key), call f, commit.
// A duplicate calls dup and returns nil.
func (in *Inbox) run(ctx context.Context, name, key string, f func(pgx.Tx) error, dup func()) error {
	name, key = storedKey(name), storedKey(key)
	tx, fresh, err := in.s.claim(ctx, in.cfg.IsoLevel, name, key)
	done := false
	defer func() {
		if !done { // an error, a duplicate or a panic: nothing of it stays
			rollback(ctx, tx) // also releases the connection
		}
	}()
	if err != nil {
		return fmt.Errorf("exactlyonce: inbox: begin and record %s/%s: %w", name, key, err)
	}
	if !fresh {
		in.s.m.duplicates.WithLabelValues(name).Inc()
		dup()
		return nil
	}
	if err := f(tx); err != nil {
		return err
	}
	done = true
	if err := tx.Commit(ctx); err != nil {
		// The commit may have happened (a connection lost on its way
		// back): the retry finds the record then.
		return fmt.Errorf("exactlyonce: inbox: commit %s/%s: %w", name, key, err)
	}
	in.s.m.handled.WithLabelValues(name).Inc()
	return nil
}

// claim begins a transaction of isolation iso and records (name, key) in
// it unless it is recorded, reporting whether it was not, in one round
// trip (a pipelined batch of three statements, pgx.Batch.BeginTx): the
// BEGIN; the transaction lock on (name, key); then the insert, whose
// snapshot, taken after the lock was granted, sees the record of a
// delivery whose transaction held it. The insert's ON CONFLICT covers the
// partition it writes to; its NOT EXISTS reads the others (up to
// tomorrow's). tx is never nil, also with an error: the caller commits
// it or rolls it back (which releases its connection to the pool).
// (Measured with BenchmarkInbox and dropped: one plpgsql function doing
// the lock and the insert in one statement, and the BEGIN and that call
// sent as one simple-protocol query: each cost more than the round trip
// it saved.)
func (s *Store) claim(ctx context.Context, iso pgx.TxIsoLevel, name, key string) (tx pgx.Tx, fresh bool, err error) {
	now := s.now()
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{IsoLevel: iso})
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, inboxLock(s.cfg.Schema, name, key))
	b.Queue(s.sql.claim, name, key, s.dayOf(now), day(now))
	br := s.pool.SendBatch(ctx, b)
	tx = br.Tx()
	var tag pgconn.CommandTag
	for range 3 { // begin, lock, insert
		if tag, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tx, false, err
	}
	return tx, tag.RowsAffected() == 1, nil
}

// rollback rolls tx back, also when ctx has ended (a shutdown): a rollback
// that fails leaves the connection closed, which rolls back too.
func rollback(ctx context.Context, tx pgx.Tx) {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
	}
	_ = tx.Rollback(ctx)
}

// digest is the key stored for a key too long or not text (storedKey).
func digest(k string) string { return broker.DerivedMessageID([]byte(k)) }
