package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// The keeper's partition workers hand the dead letters they have at hand
// to the keeper in batches of at most keeperBatch records and
// keeperBatchBytes (one store transaction each); keeperConcurrency batches
// (of different partitions) are stored at once, and a running batch gets
// keeperShutdownTimeout on shutdown.
const (
	keeperBatch           = 500
	keeperBatchBytes      = 4 << 20
	keeperConcurrency     = 4
	keeperShutdownTimeout = 10 * time.Second
)

var (
	_ driver.Source      = (*Broker)(nil)
	_ driver.BatchSource = (*Broker)(nil)
)

// ConsumeDeadLetters implements driver.Source: ConsumeDeadLetterBatches with
// handle called for each record of a batch in order (driver.HandleEach).
func (b *Broker) ConsumeDeadLetters(ctx context.Context, dlqs []string, handle func(context.Context, driver.DeadLetter) error) error {
	if handle == nil {
		return errors.New("kafka: consume dead letters: handle is nil")
	}
	return b.ConsumeDeadLetterBatches(ctx, dlqs, driver.HandleEach(handle))
}

// ConsumeDeadLetterBatches implements driver.BatchSource: it consumes the DLQ
// topics dlqs (<topic>.dlq) as the group Config.KeeperGroup, from their
// start, and calls handle with the records each partition has buffered,
// in offset order, a batch at a time. A batch's offsets are committed only
// after handle returned nil for every record of it; the records it failed
// are offered again with back-off (alone; the others are not) and the
// records behind them in their partition wait. Several keepers may run at
// once: they share the partitions. It blocks until ctx ends.
//
// Each dead letter's ID is "{partition}-{offset}"; its Identity adds the
// record timestamp ("{partition}-{offset}@{ms}"), so that the records of a
// recreated DLQ topic are not taken for ones already stored. A record that
// is not a redrive envelope is decoded from Spring Kafka or Kafka Connect
// dead-letter headers when it has them, else kept raw (driver.ReasonUnparseable).
// The topics of Config.ForeignDLQs (other applications' dead-letter
// topics) are read as their format says, never as envelopes.
func (b *Broker) ConsumeDeadLetterBatches(ctx context.Context, dlqs []string, handle func(context.Context, []driver.DeadLetter) []error) error {
	if b.isClosed() {
		return broker.ErrClosed
	}
	if len(dlqs) == 0 {
		return errors.New("kafka: consume dead letters: no DLQ topics")
	}
	if handle == nil {
		return errors.New("kafka: consume dead letters: handle is nil")
	}
	sub := broker.Subscription{Group: b.cfg.KeeperGroup, Concurrency: keeperConcurrency, ShutdownTimeout: keeperShutdownTimeout}
	c := newConsumer(b, sub, b.log.With("keeper_group", b.cfg.KeeperGroup))
	c.procBatch = func(p *partition, rs []*kgo.Record) bool { return p.keep(rs, handle) }
	c.log.Info("keeping dead letters", "dlqs", dlqs)
	if err := c.consume(ctx, b.cfg.KeeperGroup, dlqs...); err != nil {
		return fmt.Errorf("kafka: consume dead letters of %v: %w", dlqs, err)
	}
	return nil
}

// runBatches hands the worker's records to procBatch, a batch at a time,
// until the worker is halted.
func (p *partition) runBatches() {
	for {
		rs, ok := p.nextBatch(keeperBatch, keeperBatchBytes)
		if !ok {
			return
		}
		if !p.c.procBatch(p, rs) {
			return
		}
		p.markDone(rs[len(rs)-1])
	}
}

// nextBatch returns the records buffered, at least one, at most n and
// (beyond the first) bytes; false once the worker is halted.
func (p *partition) nextBatch(n, bytes int) ([]*kgo.Record, bool) {
	for {
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return nil, false
		}
		if len(p.queue) > 0 {
			var out []*kgo.Record
			size := 0
			for len(p.queue) > 0 && len(out) < n {
				r := p.queue[0]
				rb := recordBytes(r)
				if len(out) > 0 && size+rb > bytes {
					break
				}
				out = append(out, r)
				size += rb
				p.queue[0] = nil
				p.queue = p.queue[1:]
				p.bytes -= rb
			}
			p.tookLocked()
			p.mu.Unlock()
			return out, true
		}
		p.mu.Unlock()
		select {
		case <-p.wake:
		case <-p.halted:
		}
	}
}

// keep hands rs to handle until handle accepted each (true) or the worker
// is halted (false: the batch stays uncommitted for the next keeper). The
// records handle failed are offered again, alone, after a back-off.
func (p *partition) keep(rs []*kgo.Record, handle func(context.Context, []driver.DeadLetter) []error) bool {
	dls := make([]driver.DeadLetter, len(rs))
	for i, r := range rs {
		dls[i] = p.c.b.deadLetterOf(r)
	}
	backoff := p.c.b.cfg.WriteRetryBackoff
	for {
		if !p.c.slots.take(p.halted) {
			return false
		}
		errs := handle(p.ctx, dls)
		p.c.slots.give()
		left := dls[:0]
		for i, err := range errs {
			if err != nil {
				if !errors.Is(err, driver.ErrNotTried) {
					p.log.Warn("dead letter not kept; will offer it again, offset stays uncommitted",
						"id", dls[i].ID, "error", err, "backoff", backoff)
				}
				left = append(left, dls[i])
			}
		}
		if len(left) == 0 {
			return true
		}
		dls = left
		if !p.backOff(&backoff) {
			return false
		}
	}
}

// deadLetterOf reads one record of a DLQ topic: redrive's envelope, else
// (or, for a topic of Config.ForeignDLQs, only) the dead-letter headers of
// Spring Kafka or Kafka Connect its format allows, else kept raw.
func (b *Broker) deadLetterOf(r *kgo.Record) driver.DeadLetter {
	id := RecordID(r.Partition, r.Offset)
	dl := driver.DeadLetter{DLQ: r.Topic, ID: id, Identity: id + "@" + strconv.FormatInt(r.Timestamp.UnixMilli(), 10)}
	format, foreign := b.cfg.ForeignDLQs[r.Topic]
	var err error
	if foreign {
		// Another application's dead letter: its value is that
		// application's payload, whatever it looks like.
		err = fmt.Errorf("%s: no %s dead-letter headers", r.Topic, formatName(format))
	} else {
		e, derr := DecodeEnvelope(r.Value)
		if derr == nil {
			dl.Entry = e
			return dl
		}
		err, format = derr, FormatAuto
	}
	h := fromHeaders(r.Headers)
	if fe, prefix, ok := decodeForeign(format, h); ok {
		fe.OriginalKey, fe.OriginalValue = r.Key, r.Value
		fe.OriginalWire = appWire(slices.DeleteFunc(wireHeaders(r.Headers), func(f wire.Field) bool {
			return strings.HasPrefix(f.Name, prefix)
		}))
		dl.Entry = fe
		return dl
	}
	dl.Entry = driver.Entry{
		MessageID:         h[driver.HeaderMessageID],
		OriginalTopic:     strings.TrimSuffix(r.Topic, dlqSuffix),
		OriginalPartition: -1,
		OriginalOffset:    -1,
		OriginalKey:       r.Key,
		OriginalValue:     r.Value,
		OriginalHeaders:   driver.AppHeaders(h),
		OriginalWire:      appWire(wireHeaders(r.Headers)),
		ErrorMessage:      err.Error(),
		Reason:            string(driver.ReasonUnparseable),
		Worker:            h[broker.HeaderWorker],
	}
	if foreign {
		dl.Entry.OriginalTopic, dl.Entry.Worker = "", "" // unknown: not redrive's
	}
	return dl
}

// formatName names the tools whose headers format f reads, in messages.
func formatName(f ForeignFormat) string {
	switch f {
	case FormatSpring:
		return "Spring Kafka (kafka_dlt-*)"
	case FormatConnect:
		return "Kafka Connect (__connect.errors.*)"
	}
	return "Spring Kafka (kafka_dlt-*) or Kafka Connect (__connect.errors.*)"
}

// RecordID is the id scheme of this backend's dead letters: the stored
// entry of the DLQ record at (partition, offset) is
// "{partition}-{offset}", which an operator can find the record by.
func RecordID(partition int32, offset int64) string {
	return strconv.FormatInt(int64(partition), 10) + "-" + strconv.FormatInt(offset, 10)
}
