package bench

import (
	"context"
	"fmt"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
)

// The relay's second baseline: what a user would write without redrive,
// the raw client fed from PostgreSQL. Issue 43's target compares the
// relay with the raw client publishing messages it holds in memory; on
// Kafka, kfake runs in the bench's process and takes a batch in about a
// millisecond, while any relay reads and deletes its rows in PostgreSQL.
// This baseline does the same database work as the relay, by hand: read
// a batch of a plain outbox table in order, publish it with the raw
// client (confirms awaited), delete it, and again.

// Clients of the by-hand comparison.
const (
	// ClientRelayByHand is the raw client relaying a plain outbox table
	// by hand: read a batch, publish it with confirms, delete it.
	ClientRelayByHand = "raw relay by hand (PostgreSQL-fed)"
	// ClientRelayVsByHand is the relay's row again, its ratio over
	// ClientRelayByHand's (no target: the is against raw).
	ClientRelayVsByHand = "outbox relay (vs by hand)"
)

// relayByHand writes n messages to a plain outbox table (committed, not
// timed) and times the raw client relaying them by hand, a batch of the
// relay's size at a time: SELECT in order, publish with confirms, DELETE,
// one after the other (no overlap: the simplest relay).
func (fx *effectsDB) relayByHand(ctx context.Context, d effectsSide, name string, n int) (Row, error) {
	e := d.env()
	table := fx.schema + ".byhand_outbox"
	for _, batch := range messages(n, exactlyonce.DefaultRelayBatch, body(e.cfg.Size)) {
		ids, values := make([]string, len(batch)), make([][]byte, len(batch))
		for i, m := range batch {
			ids[i], values[i] = broker.NewMessageID(), m.Value
		}
		if _, err := fx.pool.Exec(ctx, `INSERT INTO `+table+` (id, value) SELECT u.id, u.value FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS u(id, value, n) ORDER BY u.n`, ids, values); err != nil {
			return Row{}, fmt.Errorf("by hand: write the outbox: %w", err)
		}
	}
	snd, err := d.rawSender(ctx, name)
	if err != nil {
		return Row{}, err
	}
	defer func() { _ = snd.close() }()
	m := startMeter()
	for done := 0; done < n; {
		rows, err := fx.pool.Query(ctx, `SELECT seq, key, id, value, ts FROM `+table+` ORDER BY seq LIMIT $1`, exactlyonce.DefaultRelayBatch)
		if err != nil {
			return Row{}, fmt.Errorf("by hand: read: %w", err)
		}
		var seqs []int64
		var msgs []broker.Message
		for rows.Next() {
			var seq int64
			var msg broker.Message
			if err := rows.Scan(&seq, &msg.Key, &msg.ID, &msg.Value, &msg.Timestamp); err != nil {
				rows.Close()
				return Row{}, fmt.Errorf("by hand: read: %w", err)
			}
			seqs, msgs = append(seqs, seq), append(msgs, msg)
		}
		if err := rows.Err(); err != nil {
			return Row{}, fmt.Errorf("by hand: read: %w", err)
		}
		if len(msgs) == 0 {
			return Row{}, fmt.Errorf("by hand: the outbox ran dry after %d of %d", done, n)
		}
		if err := snd.send(ctx, msgs); err != nil {
			return Row{}, fmt.Errorf("by hand: %w", err)
		}
		if _, err := fx.pool.Exec(ctx, `DELETE FROM `+table+` WHERE seq = ANY($1)`, seqs); err != nil {
			return Row{}, fmt.Errorf("by hand: delete: %w", err)
		}
		done += len(msgs)
	}
	el, u := m.stop()
	r := row(ScenarioEffects, e.broker, ClientRelayByHand, n, el, u)
	r.Note = fmt.Sprintf("batches of %d: SELECT, raw publish (confirmed), DELETE, in turn", exactlyonce.DefaultRelayBatch)
	return r, nil
}

// byHandTable is the plain outbox table of relayByHand: the relay's
// columns that travel (key, id, value, timestamp) in write order.
const byHandTable = `CREATE TABLE %s.byhand_outbox (
	seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key bytea, id text NOT NULL, value bytea NOT NULL,
	ts timestamptz NOT NULL DEFAULT now())`
