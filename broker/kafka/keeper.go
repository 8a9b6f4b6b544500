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
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
)

// Keeper consumers hand one dead letter at a time to the keeper (dead
// letters are few; like the RabbitMQ source, each is stored before the next),
// and give a running handle this long on shutdown.
const (
	keeperConcurrency     = 1
	keeperShutdownTimeout = 10 * time.Second
)

var _ dlq.Source = (*Broker)(nil)

// ConsumeDeadLetters implements dlq.Source: it consumes the DLQ topics dlqs
// (<topic>.dlq) as the group Config.KeeperGroup, from their start, and
// calls handle for every record. A record's offset is committed only after
// handle returned nil for it; when handle fails, the record is offered again
// with back-off and the records behind it in its partition wait. Several
// keepers may run at once: they share the partitions. It blocks until ctx
// ends.
//
// Each dead letter's ID is "{partition}-{offset}"; its Identity adds the
// record timestamp ("{partition}-{offset}@{ms}"), so that the records of a
// recreated DLQ topic are not taken for ones already stored. A record that
// is not a redrive envelope is decoded from Spring Kafka or Kafka Connect
// dead-letter headers when it has them, else kept raw (dlq.ReasonUnparseable).
func (b *Broker) ConsumeDeadLetters(ctx context.Context, dlqs []string, handle func(context.Context, dlq.DeadLetter) error) error {
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
	c.proc = func(p *partition, r *kgo.Record) bool { return p.keep(r, handle) }
	c.log.Info("keeping dead letters", "dlqs", dlqs)
	if err := c.consume(ctx, b.cfg.KeeperGroup, dlqs...); err != nil {
		return fmt.Errorf("kafka: consume dead letters of %v: %w", dlqs, err)
	}
	return nil
}

// keep hands r to handle until handle accepts it (true) or the worker is
// halted (false: r stays uncommitted for the next keeper).
func (p *partition) keep(r *kgo.Record, handle func(context.Context, dlq.DeadLetter) error) bool {
	dl := deadLetterOf(r)
	backoff := p.c.b.cfg.WriteRetryBackoff
	for {
		select {
		case p.c.sem <- struct{}{}:
		case <-p.halted:
			return false
		}
		err := handle(p.ctx, dl)
		<-p.c.sem
		if err == nil {
			return true
		}
		p.log.Warn("dead letter not kept; will offer it again, offset stays uncommitted",
			"id", dl.ID, "error", err, "backoff", backoff)
		timer := time.NewTimer(backoff)
		select {
		case <-timer.C:
		case <-p.halted:
			timer.Stop()
			return false
		}
		backoff = min(2*backoff, DefaultMaxWriteBackoff)
	}
}

// deadLetterOf reads one record of a DLQ topic.
func deadLetterOf(r *kgo.Record) dlq.DeadLetter {
	id := dlq.KafkaID(r.Partition, r.Offset)
	dl := dlq.DeadLetter{DLQ: r.Topic, ID: id, Identity: id + "@" + strconv.FormatInt(r.Timestamp.UnixMilli(), 10)}
	e, err := DecodeEnvelope(r.Value)
	if err == nil {
		dl.Entry = e
		return dl
	}
	h := fromHeaders(r.Headers)
	if fe, prefix, ok := fromForeignHeaders(h); ok {
		fe.OriginalKey, fe.OriginalValue = r.Key, r.Value
		fe.OriginalWire = appWire(slices.DeleteFunc(wireHeaders(r.Headers), func(f wire.Field) bool {
			return strings.HasPrefix(f.Name, prefix)
		}))
		dl.Entry = fe
		return dl
	}
	dl.Entry = dlq.Entry{
		MessageID:         h[broker.HeaderMessageID],
		OriginalTopic:     strings.TrimSuffix(r.Topic, dlqSuffix),
		OriginalPartition: -1,
		OriginalOffset:    -1,
		OriginalKey:       r.Key,
		OriginalValue:     r.Value,
		OriginalHeaders:   broker.AppHeaders(h),
		OriginalWire:      appWire(wireHeaders(r.Headers)),
		ErrorMessage:      err.Error(),
		Reason:            dlq.ReasonUnparseable,
		Worker:            h[broker.HeaderWorker],
	}
	return dl
}
