package kafka

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// deadLetter sends r (delivered as d, decided by dec) to <topic>.dlq (see
// send: the partition goes on while the copy is in flight; the source
// offset is committed only once the broker acknowledged it, and a write
// the broker refuses is tried again with back-off). first is the record's
// first decision, whose claim is released once the copy is acknowledged.
// It returns false when the worker is halted first.
func (p *partition) deadLetter(r *kgo.Record, d *broker.Delivery, dec, first driver.Decision) bool {
	rec, err := p.c.deadLetterRecord(r, d, dec.Outcome, dec.Cause, dec.At)
	if err != nil {
		// The envelope cannot be encoded: nothing to write, and dropping
		// the message is not an option. Hold the partition, loudly.
		p.log.Error("cannot encode dead-letter envelope; partition held", "offset", d.Offset, "error", err)
		<-p.halted
		return false
	}
	return p.send(r, rec, "dead-letter", first)
}

// deadLetterRecord builds the <topic>.dlq record of r (delivered as d):
// value = the JSON envelope (EncodeEnvelope, with the exact headers in
// original_wire), key = the original key, headers = the original headers
// exactly, then the x-redrive-* story (reason, worker, ...).
func (c *consumer) deadLetterRecord(r *kgo.Record, d *broker.Delivery, o driver.Outcome, cause error, now time.Time) (*kgo.Record, error) {
	return c.envelopeRecord(r, d, o, now, deadLetterEntry(r, d, o, cause, now))
}

// deadLetterEntry is the dead letter of r (delivered as d) that its
// envelope carries.
func deadLetterEntry(r *kgo.Record, d *broker.Delivery, o driver.Outcome, cause error, now time.Time) driver.Entry {
	part, off := origin(d)
	first, last := d.FirstFailureAt, d.LastFailureAt
	if cause != nil { // a handler failure, not an expiry
		if first.IsZero() {
			first = now
		}
		last = now
	}
	return driver.Entry{
		MessageID:         d.StableID(), // derived for a record written without one
		OriginalTopic:     d.Topic,
		OriginalPartition: part,
		OriginalOffset:    off,
		OriginalKey:       r.Key,
		OriginalValue:     r.Value,
		OriginalHeaders:   wireHeaders(r.Headers).App().Strings(),
		OriginalWire:      appWire(wireHeaders(r.Headers)),
		ErrorClass:        o.Class,
		ErrorMessage:      o.Error,
		StackTrace:        stackTrace(cause),
		Reason:            string(o.Reason),
		RetryCount:        max(d.Attempt, 1) - 1,
		Worker:            d.Group,
		WorkerInstance:    d.Instance,
		Source:            d.Source,
		FirstFailureAt:    first,
		LastFailureAt:     last,
	}
}

// envelopeRecord is the <topic>.dlq record of r (delivered as d) carrying
// e, its dead letter.
func (c *consumer) envelopeRecord(r *kgo.Record, d *broker.Delivery, o driver.Outcome, now time.Time, e driver.Entry) (*kgo.Record, error) {
	val, err := EncodeEnvelope(e)
	if err != nil {
		return nil, err
	}
	h := storyHeaders(r, d, o, now, driver.HeaderDueAt, headerOriginPartition, headerOriginOffset, headerOriginTimestamp)
	return &kgo.Record{Topic: DLQTopic(c.sub.Topic), Key: r.Key, Value: val, Headers: recordHeaders(h), Timestamp: now}, nil
}

// stackTrace returns the first characters of a recovered panic's stack.
func stackTrace(err error) string {
	var pe *driver.PanicError
	if !errors.As(err, &pe) {
		return ""
	}
	s := string(pe.Stack)
	if len(s) > MaxStackTrace {
		s = s[:MaxStackTrace]
	}
	return s
}
