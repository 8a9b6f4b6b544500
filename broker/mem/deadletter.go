package mem

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// Bounds of a batch of dead letters ConsumeDeadLetterBatches hands over.
const (
	MaxBatch      = 256
	MaxBatchBytes = 4 << 20
)

// Back-offs of a dead letter whose handling failed (the keeper's store
// is down), on the wall clock: the keeper's outage is real.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// entryOf is the dead letter view of a dead-letter message: the original
// message byte for byte and the story its headers tell.
func entryOf(m *message) driver.Entry {
	h := m.headers
	e := driver.Entry{
		MessageID: m.id, OriginalTopic: m.topic, OriginalPartition: -1, OriginalOffset: -1,
		OriginalKey: m.key, OriginalValue: m.value, OriginalHeaders: driver.AppHeaders(h),
		ErrorClass: h[broker.HeaderErrorClass], ErrorMessage: h[broker.HeaderError], Reason: h[broker.HeaderReason],
		Worker: h[broker.HeaderWorker], WorkerInstance: h[broker.HeaderWorkerInstance], Source: h[broker.HeaderSource],
		FirstFailureAt: wire.ParseTime(h[broker.HeaderFirstFailureAt]), LastFailureAt: wire.ParseTime(h[broker.HeaderLastFailureAt]),
	}
	if n, err := strconv.Atoi(h[broker.HeaderAttempt]); err == nil && n > 1 {
		e.RetryCount = n - 1
	}
	return e
}

// ConsumeDeadLetters implements driver.Source.
func (b *Broker) ConsumeDeadLetters(ctx context.Context, dlqs []string, handle func(context.Context, driver.DeadLetter) error) error {
	return b.ConsumeDeadLetterBatches(ctx, dlqs, driver.HandleEach(handle))
}

// ConsumeDeadLetterBatches implements driver.BatchSource: it hands handle
// the dead letters of dlqs at hand, at most MaxBatch and MaxBatchBytes of
// values at a time, in the order they were dead-lettered, and forgets
// each once handle returned nil for it; the others are offered again,
// first, after a back-off. Several callers share the DLQs' messages, each
// handed to one. It blocks until ctx ends and returns nil.
func (b *Broker) ConsumeDeadLetterBatches(ctx context.Context, dlqs []string, handle func(context.Context, []driver.DeadLetter) []error) error {
	if b.isClosed() {
		return fmt.Errorf("mem: consume dead letters: %w", ErrClosed)
	}
	s := b.srv
	s.mu.Lock()
	qs := make([]*queue, len(dlqs))
	for i, name := range dlqs {
		qs[i] = s.dlq(name)
		qs[i].consumers++
		qs[i].consumed = true
	}
	s.bump()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for _, q := range qs {
			q.consumers--
		}
		s.bump()
		s.mu.Unlock()
	}()
	backoff := minBackoff
	for {
		its, owners, changed := b.takeDead(qs)
		if len(its) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
				continue
			}
		}
		dls := make([]driver.DeadLetter, len(its))
		for i, it := range its {
			dls[i] = driver.DeadLetter{DLQ: owners[i].name, Identity: it.dead.identity, Entry: entryOf(it.msg)}
			dls[i].Entry.StackTrace = it.dead.stack
		}
		errs := handle(ctx, dls)
		failed := false
		s.mu.Lock()
		// Failed ones go back first, in their order.
		for i := len(its) - 1; i >= 0; i-- {
			if i < len(errs) && errs[i] == nil {
				owners[i].done(its[i])
				continue
			}
			failed = true
			it := its[i]
			owners[i].replace(it, &item{msg: it.msg, due: s.now(), seq: it.seq, front: true, dead: it.dead, redelivered: true}, s.now())
		}
		s.bump()
		s.mu.Unlock()
		if !failed {
			backoff = minBackoff
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// takeDead takes the dead letters at hand in qs, within a batch's
// bounds, with the queue of each; none, and a channel closed at the
// server's next change, when there are none.
func (b *Broker) takeDead(qs []*queue) (its []*item, owners []*queue, changed <-chan struct{}) {
	s := b.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	bytes := 0
	for _, q := range qs {
		for len(its) < MaxBatch && bytes < MaxBatchBytes {
			it := q.take()
			if it == nil {
				break
			}
			its, owners = append(its, it), append(owners, q)
			bytes += len(it.msg.value)
		}
	}
	return its, owners, s.changed
}

// Republish implements driver.Republisher: the dead letter e goes, with
// its original id, key, value and headers and the replayed-from header,
// to to.Target: a worker's queue (the route of Router), or a topic, which
// every worker of it receives. It is in the queue when Republish returns.
func (b *Broker) Republish(ctx context.Context, e driver.Entry, to driver.Route, replayedFrom string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mem: republish to %s: %w", to.Target, err)
	}
	if b.isClosed() {
		return fmt.Errorf("mem: republish to %s: %w", to.Target, ErrClosed)
	}
	h := maps.Clone(e.OriginalHeaders)
	if h == nil {
		h = map[string]string{}
	}
	h[broker.HeaderReplayedFrom] = replayedFrom
	id := e.MessageID
	if id == "" {
		id = broker.NewMessageID()
	}
	topic := cmpOr(to.Topic, e.OriginalTopic)
	m := &message{id: id, key: clone(e.OriginalKey), value: clone(e.OriginalValue), headers: h, topic: topic}
	s := b.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	m.timestamp = s.now()
	if q, ok := s.queues[to.Target]; ok {
		s.seq++
		q.push(&item{msg: m, due: s.now(), seq: s.seq}, s.now())
		q.signal()
		s.bump()
		return nil
	}
	if _, ok := s.topics[to.Target]; ok {
		m.topic = to.Target
		return s.enqueue(to.Target, 0, []*message{m})
	}
	return fmt.Errorf("mem: republish to %s: %w", to.Target, ErrNoQueue)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
