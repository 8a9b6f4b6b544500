package mem

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Stats are the counts of one worker's queue and DLQ.
type Stats struct {
	// Due messages wait for a handler now; Delayed ones until their
	// delay or back-off ends; InFlight are in a handler.
	Due, Delayed, InFlight int
	// DeadLetters are in the worker's DLQ (read by no keeper yet).
	DeadLetters int
	// Consumers are the Consume calls running on the worker's queue;
	// Readers the ConsumeDeadLetters calls reading its DLQ (keepers).
	Consumers, Readers int
}

// Stats returns the counts of the queue and DLQ of worker group of
// topic (zero when it was never declared).
func (s *Server) Stats(topic, group string) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st Stats
	if q, ok := s.queues[QueueName(topic, group)]; ok {
		q.promote(s.now())
		st = Stats{Due: q.ready.Len(), Delayed: q.delayed.Len(), InFlight: len(q.taken), Consumers: q.consumers}
	}
	if q, ok := s.dlqs[DLQName(topic, group)]; ok {
		st.DeadLetters, st.Readers = q.length(), q.consumers
	}
	return st
}

// DeadLetters returns the dead letters in the DLQ of worker group of
// topic, oldest first, as the keeper would store them (without taking
// them: a keeper still reads them).
func (s *Server) DeadLetters(topic, group string) []driver.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.dlqs[DLQName(topic, group)]
	if !ok {
		return nil
	}
	var its []*item
	for e := q.ready.Front(); e != nil; e = e.Next() {
		its = append(its, e.Value.(*item))
	}
	for it := range q.taken {
		its = append(its, it)
	}
	slices.SortFunc(its, func(a, b *item) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]driver.Entry, len(its))
	for i, it := range its {
		out[i] = entryOf(it.msg)
		out[i].StackTrace = it.dead.stack
	}
	return out
}

// Changed returns a channel closed at the server's next change (a
// message published, handled, retried, dead-lettered or stored by a
// keeper), for a probe that waits for a condition without sleeping.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Inject puts one message in topic as another producer would write it:
// no id, no redrive header, the key, value and headers as given (nil
// ones included). Like a RabbitMQ message without a message-id, it gets
// an id derived from where it was written (broker.DerivedMessageID),
// which its retries, dead letter and replays keep. It is for tests of
// what handlers do with input redrive did not write.
func (s *Server) Inject(topic string, key, value []byte, headers map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	m := &message{
		id:  broker.DerivedMessageID([]byte("memory"), []byte(s.id), []byte(topic), []byte(strconv.FormatUint(s.seq, 10))),
		key: key, value: value, headers: maps.Clone(headers), topic: topic, timestamp: s.now(),
	}
	return s.enqueue(topic, 0, []*message{m})
}
