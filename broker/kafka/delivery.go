package kafka

import (
	"strconv"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/internal/pipeline"
)

// Headers this backend adds to retry copies, so that a message read back from
// <topic>.retry.<group> still knows where it was first published. They start
// with x-redrive- and so are not application headers.
const (
	headerOriginPartition = "x-redrive-origin-partition"
	headerOriginOffset    = "x-redrive-origin-offset"
	headerOriginTimestamp = "x-redrive-origin-timestamp"
)

// delivery builds the Delivery of r: every header (redrive's story
// included), the message id from x-redrive-message-id, the story from the
// x-redrive-* headers, and the original timestamp for retry copies. A
// record without any x-redrive-* header (one a plain producer wrote) is
// read in one pass over its headers, without looking anything up.
//
// Header values share r's memory (headerString): building a map of copies
// was the larger part of consuming a record.
func (c *consumer) delivery(r *kgo.Record) *broker.Delivery {
	h := make(map[string]string, len(r.Headers))
	own := false
	for _, x := range r.Headers {
		h[x.Key] = headerString(x.Value)
		own = own || wire.Own(x.Key)
	}
	d := &broker.Delivery{
		Message: broker.Message{
			Key:       r.Key,
			Value:     r.Value,
			Headers:   h,
			Timestamp: r.Timestamp,
		},
		Topic:     c.sub.Topic,
		Group:     c.sub.Group,
		Instance:  c.b.cfg.InstanceID,
		Source:    r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Attempt:   1,
	}
	if !own {
		return d
	}
	d.ID = h[broker.HeaderMessageID]
	if t := wire.ParseTime(h[headerOriginTimestamp]); !t.IsZero() {
		d.Timestamp = t
	}
	readStory(d)
	return d
}

// headerString returns b, a header value of a fetched record, as a string
// without copying it. Nothing writes to a fetched record's memory (franz-go
// reuses it only after Record.Recycle, which this package never calls), and
// the string keeps the fetch's buffer alive no longer than the record's
// Value, which the Delivery holds anyway.
func headerString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// readStory is pipeline.ReadStory, skipped for a record that never failed
// (no story header): ReadStory's strconv.Atoi of a missing attempt header
// allocates an error, two allocations per record on the consume path.
func readStory(d *broker.Delivery) {
	h := d.Headers
	if h[broker.HeaderAttempt] == "" && h[broker.HeaderFirstFailureAt] == "" && h[broker.HeaderLastFailureAt] == "" && h[broker.HeaderError] == "" {
		d.Attempt = 1 // what ReadStory gives without those headers
		return
	}
	pipeline.ReadStory(d)
}

// origin returns the partition and offset d was first published at: its own
// for a record of <topic>, the recorded ones for a retry copy.
func origin(d *broker.Delivery) (int32, int64) {
	part, errP := strconv.ParseInt(d.Headers[headerOriginPartition], 10, 32)
	off, errO := strconv.ParseInt(d.Headers[headerOriginOffset], 10, 64)
	if errP != nil || errO != nil {
		return d.Partition, d.Offset
	}
	return int32(part), off
}
