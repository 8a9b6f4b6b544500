package kafka

import (
	"encoding/binary"
	"strconv"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// Headers this backend adds to retry copies, so that a message read back from
// <topic>.retry.<group> still knows where it was first published. They start
// with x-redrive- and so are not application headers.
const (
	headerOriginPartition = "x-redrive-origin-partition"
	headerOriginOffset    = "x-redrive-origin-offset"
	headerOriginTimestamp = "x-redrive-origin-timestamp"
)

// delivery builds the Delivery of r in a Delivery of its own, its Headers
// always built (see fill), with room for the story of a failure
// (driver.StoryLen): the one a retry in place or a retry or dead-letter
// copy is made of.
func (c *consumer) delivery(r *kgo.Record) *broker.Delivery {
	d := &broker.Delivery{Message: broker.Message{Headers: make(map[string]string, len(r.Headers)+driver.StoryLen)}}
	c.fill(d, r, false)
	return d
}

// newDelivery builds the Delivery of r (see fill) in the next free
// Delivery of the worker's slab (newSlab). Without a slab (a record of the
// retry topic) it allocates. With Subscription.ReuseDeliveries and a
// Headers map, the Delivery's map of the last batch is cleared and filled
// again, unless it held more than maxReusedHeaders entries: a Go map never
// shrinks, and one record with many headers must not keep its map's
// memory. story reports whether r has x-redrive-* headers besides the
// message id (see fill).
func (p *partition) newDelivery(r *kgo.Record) (d *broker.Delivery, story bool) {
	if len(p.slab) == 0 {
		d = new(broker.Delivery)
	} else {
		d = &p.slab[0]
		p.slab = p.slab[1:]
	}
	if len(p.maps) == 0 { // as long as the slab, when there are any
		return d, p.c.fill(d, r, p.c.sub.HeadersOnDemand)
	}
	m := p.maps[0]
	if len(m) > maxReusedHeaders {
		m = nil
	}
	clear(m)
	d.Headers = m
	story = p.c.fill(d, r, false)
	p.maps[0] = d.Headers // kept before the handler may replace it
	p.maps = p.maps[1:]
	return d, story
}

// maxReusedHeaders bounds the Headers map a reused Delivery keeps for the
// next record (newDelivery).
const maxReusedHeaders = 64

// newSlab makes the slab of the n records (at most maxTake) run took off
// the buffer at once: their Deliveries in one allocation instead of one
// per record. A handler that keeps its *Delivery after returning keeps
// that slice (32 KiB at most) alive with it, as it keeps the fetch's
// buffer alive through Value. With Subscription.ReuseDeliveries the
// worker refills one slab instead, cleared (the handlers of the last
// batch have returned), and reuses its Deliveries' Headers maps: nothing
// is allocated per record.
func (p *partition) newSlab(n int) {
	if !p.c.sub.ReuseDeliveries {
		p.slab = make([]broker.Delivery, n)
		return
	}
	if p.reuse == nil {
		p.reuse = make([]broker.Delivery, maxTake)
		if !p.c.sub.HeadersOnDemand {
			p.reuseMaps = make([]map[string]string, maxTake)
		}
	}
	p.slab = p.reuse[:n]
	clear(p.slab)
	if p.reuseMaps != nil {
		p.maps = p.reuseMaps[:n]
	}
}

// fill builds the Delivery of r in d, which must be zero but for an empty
// Headers map to fill (delivery): every header (redrive's story
// included), the message id from x-redrive-message-id, the story from the
// x-redrive-* headers, and the original timestamp for retry copies. One
// pass over the headers finds the message id and whether any other
// x-redrive-* header is there (story, what fill reports): a record
// without one (a plain producer's, or redrive's before any failure) is
// read without looking anything up.
//
// Header values share r's memory (headerString): building a map of copies
// was the larger part of consuming a record.
//
// onDemand (Subscription.HeadersOnDemand) leaves Headers nil: the handler
// and the story read them from r (onDemandHeaders).
func (c *consumer) fill(d *broker.Delivery, r *kgo.Record, onDemand bool) (story bool) {
	var h map[string]string
	var id string
	if onDemand {
		for _, x := range r.Headers {
			if wire.Own(x.Key) {
				if x.Key == driver.HeaderMessageID {
					id = headerString(x.Value) // the last one, as Header gives
				} else {
					story = true
				}
			}
		}
		driver.SetHeaderReader(d, (*onDemandHeaders)(r))
	} else {
		if h = d.Headers; h == nil {
			h = make(map[string]string, len(r.Headers))
		}
		for _, x := range r.Headers {
			v := headerString(x.Value)
			h[x.Key] = v
			if wire.Own(x.Key) {
				if x.Key == driver.HeaderMessageID {
					id = v
				} else {
					story = true
				}
			}
		}
	}
	// Field by field: d is zero, and one composite assignment would copy
	// all 256 bytes through the write barrier while the GC runs.
	d.ID, d.Key, d.Value, d.Headers, d.Timestamp = id, r.Key, r.Value, h, r.Timestamp
	d.Topic, d.Group, d.Instance, d.Source = c.sub.Topic, c.sub.Group, c.b.cfg.InstanceID, r.Topic
	d.Partition, d.Offset, d.Attempt = r.Partition, r.Offset, 1
	if id == "" { // another producer's: its id is derived when asked (StableID)
		driver.SetDerivedID(d, derivedID)
	}
	if !story {
		return false
	}
	if t := wire.ParseTime(d.Header(headerOriginTimestamp)); !t.IsZero() {
		d.Timestamp = t
	}
	driver.ReadStory(d)
	return true
}

// onDemandHeaders reads a record's headers for a HeadersOnDemand delivery
// (driver.HeaderReader): values share the record's memory, as Headers'
// do, and a name that repeats has its last value, as in Headers.
type onDemandHeaders kgo.Record

// Header implements driver.HeaderReader.
func (r *onDemandHeaders) Header(key string) (string, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return headerString(r.Headers[i].Value), true
		}
	}
	return "", false
}

// Range implements driver.HeaderReader.
func (r *onDemandHeaders) Range(f func(key, value string) bool) {
	for i, x := range r.Headers {
		if r.repeated(x.Key, i) {
			continue
		}
		if !f(x.Key, headerString(x.Value)) {
			return
		}
	}
}

// repeated reports whether key appears again after index i.
func (r *onDemandHeaders) repeated(key string, i int) bool {
	for _, y := range r.Headers[i+1:] {
		if y.Key == key {
			return true
		}
	}
	return false
}

// headerString returns b, a header value of a fetched record, as a string
// without copying it. Nothing writes to a fetched record's memory (franz-go
// reuses it only after Record.Recycle, which this package never calls), and
// the string keeps the fetch's buffer alive no longer than the record's
// Value, which the Delivery holds anyway.
func headerString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// origin returns the partition and offset d was first published at: its own
// for a record of <topic>, the recorded ones for a retry copy.
func origin(d *broker.Delivery) (int32, int64) {
	part, errP := strconv.ParseInt(d.Header(headerOriginPartition), 10, 32)
	off, errO := strconv.ParseInt(d.Header(headerOriginOffset), 10, 64)
	if errP != nil || errO != nil {
		return d.Partition, d.Offset
	}
	return int32(part), off
}

// RecordMessageID is the message id of a Kafka record that carries no
// x-redrive-message-id header (written by a producer other than redrive):
// a broker.DerivedMessageID of where it was first written (topic,
// partition, offset) and its timestamp, which a topic deleted and created
// again does not repeat with its offsets. Its deliveries leave
// Delivery.ID empty (the consume path derives nothing); their StableID
// is this id, and so is the id of its retry copies, dead letters and
// replays.
func RecordMessageID(topic string, partition int32, offset int64, ts time.Time) string {
	var b [3 * binary.MaxVarintLen64]byte
	n := binary.PutVarint(b[:], int64(partition))
	n += binary.PutVarint(b[n:], offset)
	n += binary.PutVarint(b[n:], ts.UnixMilli())
	return broker.DerivedMessageID([]byte("kafka"), []byte(topic), b[:n])
}

// derivedID is the StableID of a delivery of a record without an id
// (driver.SetDerivedID): its RecordMessageID.
func derivedID(d *broker.Delivery) string {
	return RecordMessageID(d.Topic, d.Partition, d.Offset, d.Timestamp)
}
