package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// This file converts between franz-go's record headers and wire.Table,
// which the failure pipeline patches and the dead-letter store keeps:
// names and values are bytes, in order, a name may repeat, and a null value
// (nil) is kept apart from an empty one.

// wireHeaders returns hs as a wire.Table: []byte values, nil for null.
func wireHeaders(hs []kgo.RecordHeader) wire.Table {
	t := make(wire.Table, len(hs))
	for i, h := range hs {
		t[i] = wire.Field{Name: h.Key}
		if h.Value != nil {
			t[i].Value = h.Value
		}
	}
	return t
}

// recordHeaders returns t as record headers: byte arrays as they are, void
// as a null value, anything else as its text (redrive's story is strings).
func recordHeaders(t wire.Table) []kgo.RecordHeader {
	hs := make([]kgo.RecordHeader, len(t))
	for i, f := range t {
		hs[i].Key = f.Name
		switch v := f.Value.(type) {
		case []byte:
			hs[i].Value = v
		case nil:
		default:
			s, _ := wire.Text(v)
			hs[i].Value = []byte(s)
		}
	}
	return hs
}

// storyHeaders returns the headers of a retry or dead-letter copy of r
// after failure o: r's headers exactly, redrive's story of this failure
// patched in (driver.Patch), without the names in drop.
func storyHeaders(r *kgo.Record, d *broker.Delivery, o driver.Outcome, now time.Time, drop ...string) wire.Table {
	return driver.Patch(wireHeaders(r.Headers), d, o, now, drop...)
}

// appWire returns the exact form of the application's headers of t, as the
// dead-letter store keeps it; nil when it cannot be encoded (never for
// record headers).
func appWire(t wire.Table) []byte {
	b, err := wire.Encode(wire.Form{Headers: t.App()})
	if err != nil {
		return nil
	}
	return b
}
