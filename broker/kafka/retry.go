package kafka

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// retryInPlace is the blocking mode: d's story is updated as the next
// delivery will see it (retry.apply) and the worker waits out the back-off
// with its partition paused (other partitions keep flowing; the poll loop
// keeps the group session alive). It returns false when the worker is
// halted during the wait: the record stays uncommitted and its next owner
// handles it.
func (p *partition) retryInPlace(d *broker.Delivery, retry *inPlace) bool {
	retry.apply(d)
	return p.sleepUntil(retry.at.Add(retry.o.Delay))
}

// inPlace is one retry in place: the failure (o, at) and the story the
// delivery had before it. Applied to a fresh delivery of the record, it
// gives the headers and story of the retry, without keeping a copy of
// them while the handler runs (after a retry in place, each delivery's
// headers are the record's with the last failure's story: Story rewrites
// every name an earlier one wrote).
type inPlace struct {
	attempt int
	first   time.Time
	o       driver.Outcome
	at      time.Time
}

// apply makes d, a fresh delivery of the record, the delivery after the
// retry.
func (r *inPlace) apply(d *broker.Delivery) {
	d.Attempt, d.FirstFailureAt = r.attempt, r.first
	driver.RetryInPlace(d, r.o, r.at)
}

// retryLater is the non_blocking mode: a copy of d goes to the group's retry
// topic, due after the back-off; it is sent (see send) and r's offset is
// committed once the copy is acknowledged. first is r's first decision,
// whose claim is released then.
func (p *partition) retryLater(r *kgo.Record, d *broker.Delivery, dec, first driver.Decision) bool {
	return p.send(r, p.c.retryRecord(r, d, dec.Outcome, dec.At), "retry", first)
}

// retryRecord is the copy of r (delivered as d) written to the retry topic:
// same key, value and headers (in order, repeated names included), the
// story of this failure, the due time, and where the message first came
// from (the original partition, offset and timestamp; the copy itself is
// stamped now so that the retry topic's retention counts from the retry),
// and the message id (Delivery.StableID: derived for a record written
// without one).
func (c *consumer) retryRecord(r *kgo.Record, d *broker.Delivery, o driver.Outcome, now time.Time) *kgo.Record {
	t := storyHeaders(r, d, o, now, driver.HeaderDueAt)
	t = append(t, wire.Field{Name: driver.HeaderDueAt, Value: wire.FormatTime(dueAt(now, o.Delay))})
	if _, ok := t.Get(headerOriginPartition); !ok {
		t = append(t, wire.Field{Name: headerOriginPartition, Value: strconv.FormatInt(int64(d.Partition), 10)},
			wire.Field{Name: headerOriginOffset, Value: strconv.FormatInt(d.Offset, 10)})
	}
	if _, ok := t.Get(headerOriginTimestamp); !ok {
		t = append(t, wire.Field{Name: headerOriginTimestamp, Value: wire.FormatTime(d.Timestamp)})
	}
	if _, ok := t.Get(driver.HeaderMessageID); !ok {
		// A record written without an id: the copy carries the one its
		// deliveries have (Delivery.StableID), so that an inbox sees one
		// message however often it comes back.
		t = append(t, wire.Field{Name: driver.HeaderMessageID, Value: d.StableID()})
	}
	return &kgo.Record{Topic: c.retryTopic, Key: r.Key, Value: r.Value, Headers: recordHeaders(t), Timestamp: now}
}
