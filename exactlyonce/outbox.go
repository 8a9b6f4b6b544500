package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
)

// ErrNoTopic is Publish's error for an empty topic.
var ErrNoTopic = errors.New("exactlyonce: outbox: no topic")

// Publish writes msgs to the outbox in tx, the caller's transaction: they
// leave (a Relay publishes them to topic with Broker.Publish) only if tx
// commits, and never if it rolls back. Each message's id is fixed now: a
// message whose ID is empty gets broker.NewMessageID, written into msgs,
// and every publication of it (a relay that crashed after the broker's
// confirm publishes it again) carries that id, which the receiver's inbox
// deduplicates. Timestamp, when zero, is now.
//
// Order: the relay publishes the messages of one topic and key in the
// order their transactions committed (and, within a transaction, in the
// order written), because Publish takes a transaction lock on each
// (topic, key) it writes: a second transaction writing the same key waits
// until the first ends. Messages without a key (nil or empty, one key)
// take no lock: they keep their order within a transaction, not across
// transactions. Two transactions that write the same keys in opposite
// orders can deadlock; PostgreSQL then aborts one (retry it), as with row
// locks.
//
// One round trip: the locks, the rows and a NOTIFY that wakes the relays
// at commit (unless Config.NoNotify).
func (s *Store) Publish(ctx context.Context, tx pgx.Tx, topic string, msgs ...broker.Message) error {
	if topic == "" {
		return ErrNoTopic
	}
	if len(msgs) == 0 {
		return nil
	}
	n := len(msgs)
	shards, keys, ids, values, headers, ts := make([]int16, n), make([][]byte, n), make([]string, n), make([][]byte, n), make([][]byte, n), make([]time.Time, n)
	var locks []int64
	now := time.Now()
	for i := range msgs {
		m := &msgs[i]
		if m.ID == "" {
			m.ID = broker.NewMessageID()
		}
		h := keyHash(s.cfg.Schema, topic, m.Key)
		shards[i] = int16(h % Shards)
		if len(m.Key) > 0 {
			locks = append(locks, int64(h))
			keys[i] = m.Key
		}
		ids[i], values[i], ts[i] = m.ID, m.Value, m.Timestamp
		if values[i] == nil {
			values[i] = []byte{}
		}
		if ts[i].IsZero() {
			ts[i] = now
		}
		if len(m.Headers) > 0 {
			b, err := encodeHeaders(m.Headers)
			if err != nil {
				return fmt.Errorf("exactlyonce: outbox: message %d headers: %w", i, err)
			}
			headers[i] = b
		}
	}
	// In one order, so that two transactions locking several keys in one
	// call cannot deadlock on each other.
	slices.Sort(locks)
	locks = slices.Compact(locks)
	b := &pgx.Batch{}
	if len(locks) > 0 {
		b.Queue(`SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`, locks)
	}
	b.Queue(s.sql.write, topic, shards, keys, ids, values, headers, ts)
	if !s.cfg.NoNotify {
		b.Queue(`SELECT pg_notify($1, '')`, s.sql.channel)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("exactlyonce: outbox: write %d message(s) to %s: %w", n, topic, err)
	}
	return nil
}

// encodeHeaders is a message's headers as the outbox keeps them: the
// binary wire form (wire.Encode), names sorted; bytea keeps any byte,
// where jsonb would refuse a NUL and rewrite invalid UTF-8.
func encodeHeaders(h map[string]string) ([]byte, error) {
	t := make(wire.Table, 0, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		t = append(t, wire.Field{Name: k, Value: h[k]})
	}
	return wire.Encode(wire.Form{Headers: t})
}

// decodeHeaders reverses encodeHeaders.
func decodeHeaders(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	f, err := wire.Decode(b)
	if err != nil {
		return nil, err
	}
	h := make(map[string]string, len(f.Headers))
	for _, x := range f.Headers {
		if s, ok := x.Value.(string); ok {
			h[x.Name] = s
		}
	}
	return h, nil
}
