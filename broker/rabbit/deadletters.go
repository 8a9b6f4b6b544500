package rabbit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

var (
	_ driver.Source      = (*Broker)(nil)
	_ driver.BatchSource = (*Broker)(nil)
)

// keeperBatchBytes bounds a keeper's batch by its bodies' bytes (beyond
// its first); Config.KeeperBatch by count.
const keeperBatchBytes = 4 << 20

// ConsumeDeadLetters implements driver.Source: ConsumeDeadLetterBatches with
// handle called for each message of a batch in order (driver.HandleEach).
func (b *Broker) ConsumeDeadLetters(ctx context.Context, queues []string, handle func(context.Context, driver.DeadLetter) error) error {
	return b.ConsumeDeadLetterBatches(ctx, queues, driver.HandleEach(handle))
}

// ConsumeDeadLetterBatches implements driver.BatchSource over "<queue>.dlq"
// queues. Each queue is read in order by one goroutine, which hands the
// messages delivered to handle as one batch: up to Config.KeeperBatch
// (and 4 MiB), waiting at most Config.KeeperBatchWait after the first for
// the batch to fill, with a prefetch of two batches so that the next one
// is delivered while one is stored; a message is acked only after handle returned nil for it, and the
// messages it failed are offered again with back-off (the queue waits,
// nothing is skipped). A lost connection is re-established; unacked
// messages are redelivered.
func (b *Broker) ConsumeDeadLetterBatches(ctx context.Context, queues []string, handle func(context.Context, []driver.DeadLetter) []error) error {
	if len(queues) == 0 {
		return errors.New("rabbit: consume dead letters: no queues")
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(queues))
	for _, q := range queues {
		wg.Go(func() {
			wait := minReconnect
			for {
				started := time.Now()
				err := b.deadLetterSession(ctx, q, handle)
				if ctx.Err() != nil {
					return
				}
				if errors.Is(err, broker.ErrClosed) {
					errs <- err
					return
				}
				if time.Since(started) > maxReconnect {
					wait = minReconnect
				}
				b.log.Warn("rabbit: dead-letter consumer session ended; reconnecting", "queue", q, "err", err, "in", wait)
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, maxReconnect)
			}
		})
	}
	wg.Wait()
	close(errs)
	return errors.Join(func() []error {
		var out []error
		for e := range errs {
			out = append(out, e)
		}
		return out
	}()...)
}

func (b *Broker) deadLetterSession(ctx context.Context, queue string, handle func(context.Context, []driver.DeadLetter) []error) error {
	conn, err := b.dial(ctx, "keeper")
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbit: open keeper channel: %w", err)
	}
	if err := ch.Qos(2*b.cfg.KeeperBatch, 0, false); err != nil {
		return fmt.Errorf("rabbit: set keeper prefetch: %w", err)
	}
	msgs, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("rabbit: consume dead letters from %q: %w", queue, err)
	}
	for {
		var batch []amqp.Delivery
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return fmt.Errorf("rabbit: dead-letter stream of %q ended", queue)
			}
			batch = append(batch, m)
		}
		size := len(batch[0].Body)
		wait := time.NewTimer(b.cfg.KeeperBatchWait)
	more:
		for len(batch) < b.cfg.KeeperBatch && size < keeperBatchBytes {
			select {
			case m, ok := <-msgs:
				if !ok {
					break more // the batch is stored; the next receive tells
				}
				batch = append(batch, m)
				size += len(m.Body)
			case <-wait.C:
				break more
			case <-ctx.Done():
				break more // stored or not, unacked ones are redelivered
			}
		}
		wait.Stop()
		if err := b.keepBatch(ctx, queue, batch, handle); err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// keepBatch hands batch to handle until it accepted each message, acking
// each accepted one, the failed ones offered again after a back-off. It
// returns early (nil) when ctx ends: the unacked are redelivered to the
// next keeper.
func (b *Broker) keepBatch(ctx context.Context, queue string, batch []amqp.Delivery, handle func(context.Context, []driver.DeadLetter) []error) error {
	dls := make([]driver.DeadLetter, len(batch))
	for i, m := range batch {
		dls[i] = DeadLetterFromDelivery(queue, m)
	}
	wait := 50 * time.Millisecond
	for {
		errs := handle(ctx, dls)
		if !slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
			// Every message up to the last is handled: one ack for all.
			if err := batch[len(batch)-1].Ack(true); err != nil {
				return fmt.Errorf("rabbit: ack dead letters: %w", err)
			}
			return nil
		}
		leftM, leftD := batch[:0], dls[:0]
		for i, err := range errs {
			if err == nil {
				if err := batch[i].Ack(false); err != nil {
					return fmt.Errorf("rabbit: ack dead letter: %w", err)
				}
				continue
			}
			if !errors.Is(err, driver.ErrNotTried) {
				b.log.Warn("rabbit: dead letter not stored; retrying, not acking", "queue", queue, "id", batch[i].MessageId, "err", err, "in", wait)
			}
			leftM, leftD = append(leftM, batch[i]), append(leftD, dls[i])
		}
		batch, dls = leftM, leftD
		select {
		case <-ctx.Done():
			return nil // unacked: redelivered to the next keeper
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// DeadLetterFromDelivery reads a message of a dead-letter queue into a
// driver.DeadLetter with its identity: a digest of the queue, the message id,
// the failure time and reason (redrive's headers) or the x-death record
// (broker dead-lettering), and, for messages without an id, the body.
func DeadLetterFromDelivery(queue string, m amqp.Delivery) driver.DeadLetter {
	e := EntryFromDelivery(m)
	h := sha256.New()
	for _, s := range []string{queue, m.MessageId, e.Reason, wire.FormatTime(e.LastFailureAt), strconv.FormatInt(m.Timestamp.UnixNano(), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if deaths := parseDeath(m.Headers); len(deaths) > 0 {
		fmt.Fprintf(h, "%s|%d|%d", deaths[0].Queue, deaths[0].Count, deaths[0].Time.UnixNano())
	}
	if m.MessageId == "" {
		h.Write(m.Body)
	}
	if raw, ok := m.Headers[HeaderUndecodableRaw].([]byte); ok {
		h.Write(raw) // what tells two undecodable messages apart
	}
	if e.Reason == "" {
		e.Reason = string(driver.ReasonUnparseable)
	}
	return driver.DeadLetter{DLQ: queue, Identity: hex.EncodeToString(h.Sum(nil)), Entry: e}
}
