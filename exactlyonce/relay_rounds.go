package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/broker"
)

// The relay's rounds: read a batch of the owned shards' rows, publish
// them by topic, delete what the broker confirmed; topics the broker
// refuses are held, messages it refuses for good parked.

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
	batch, more, err := r.fetch(ctx, shards, held.topics(), nil)
	if err != nil {
		return err
	}
	var sent []int64 // confirmed, not yet deleted
	type fetched struct {
		rows []row
		more bool
		err  error
	}
	next := make(chan fetched, 1)
	for len(batch) > 0 && ctx.Err() == nil {
		full := more
		del, inflight, holding := sent, seqs(batch), held.topics()
		go func() {
			var f fetched
			f.err = r.remove(ctx, del)
			if f.err == nil && full {
				f.rows, f.more, f.err = r.fetch(ctx, shards, holding, inflight)
			}
			next <- f
		}()
		sent = r.publish(ctx, batch, held)
		f := <-next
		if f.err != nil {
			return f.err
		}
		if !full {
			break
		}
		batch, more = slices.DeleteFunc(f.rows, func(x row) bool { return held.isHeld(x.topic) }), f.more
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

// fetch reads up to a batch (Batch messages, BatchBytes bytes) of the
// shards' messages in seq order, but those of the held topics and the
// seqs in flight, and reports whether more may follow: the batch is
// full, or its size reached BatchBytes (cut by size; should it be the
// outbox's end, the next read finds nothing).
func (r *Relay) fetch(ctx context.Context, shards []int16, held []string, inflight []int64) ([]row, bool, error) {
	if inflight == nil {
		inflight = []int64{}
	}
	rows, err := r.s.pool.Query(ctx, r.s.sql.fetch, shards, held, inflight, r.cfg.Batch, r.cfg.BatchBytes)
	if err != nil {
		return nil, false, fmt.Errorf("read the outbox: %w", err)
	}
	size := 0
	batch, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var x row
		err := cr.Scan(&x.seq, &x.topic, &x.key, &x.id, &x.value, &x.headers, &x.ts, &x.writtenAt)
		size += len(x.value) + len(x.headers) + len(x.key)
		return x, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("read the outbox: %w", err)
	}
	return batch, len(batch) == r.cfg.Batch || size >= r.cfg.BatchBytes, nil
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
		err := r.cfg.Broker.Publish(ctx, t.topic, msgs...)
		done := len(t.rows) // confirmed (or parked), in order
		if err != nil {
			done = 0
		}
		if errors.Is(err, broker.ErrTooLarge) {
			done, err = r.oneByOne(ctx, t, msgs)
		}
		now := time.Now()
		for _, x := range t.rows[:done] {
			if x.seq >= 0 { // not parked
				sent = append(sent, x.seq)
				r.s.m.lag.Observe(max(now.Sub(x.writtenAt).Seconds(), 0))
				r.s.m.published.Inc()
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.s.m.errors.Inc()
			wait := held.hold(t.topic)
			r.log.Warn("exactlyonce: relay: publish failed; the topic's messages wait and are published again",
				"topic", t.topic, "messages", len(msgs)-done, "error", err, "in", wait)
			continue
		}
		held.release(t.topic)
	}
	return sent
}

// oneByOne publishes a topic's messages one at a time, after the broker
// refused one of them as too large (broker.ErrTooLarge: nothing of that
// call was sent), and parks each one it refuses so (park: marked by a
// negative seq in t.rows), so that a message the broker will never take
// does not hold its topic. It returns how many rows it went through and
// the error that stopped it.
func (r *Relay) oneByOne(ctx context.Context, t topicRows, msgs []broker.Message) (int, error) {
	for i := range msgs {
		err := r.cfg.Broker.Publish(ctx, t.topic, msgs[i])
		if errors.Is(err, broker.ErrTooLarge) {
			err = r.park(ctx, t.rows[i], err)
			t.rows[i].seq = -1
		}
		if err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

// park moves the row of a message the broker refuses for good to
// redrive_outbox_parked with the broker's error.
func (r *Relay) park(ctx context.Context, x row, cause error) error {
	if _, err := r.s.pool.Exec(ctx, r.s.sql.park, x.seq, cause.Error()); err != nil {
		return fmt.Errorf("park message %s: %w", x.id, err)
	}
	r.s.m.parked.Inc()
	r.log.Error("exactlyonce: relay: the broker refuses a message for good; it is parked in redrive_outbox_parked",
		"topic", x.topic, "id", x.id, "error", cause)
	return nil
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
