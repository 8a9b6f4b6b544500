package rabbit

import (
	"encoding/binary"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/wire"
)

// tableGen builds AMQP header tables from fuzz bytes, with every value
// type the AMQP codec produces, nesting and huge arrays: what a foreign
// producer can send.
type tableGen struct{ b []byte }

func (g *tableGen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *tableGen) u64() uint64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = g.byte()
	}
	return binary.BigEndian.Uint64(buf[:])
}

func (g *tableGen) str() string {
	n := int(g.byte())
	n = min(n, len(g.b))
	s := string(g.b[:n])
	g.b = g.b[n:]
	return s
}

// keys are the header names the code reads; others are arbitrary.
var keys = []string{
	"x-death", broker.HeaderAttempt, broker.HeaderRemainingDelay, headerDeliveryCount, driver.HeaderTopic,
	driver.HeaderKey, broker.HeaderReason, broker.HeaderFirstFailureAt, broker.HeaderLastFailureAt,
	broker.HeaderError, broker.HeaderWorker, HeaderTierPasses, "x-first-death-queue", "queue", "reason",
	"count", "time", "exchange", HeaderUndecodable, HeaderUndecodableRaw, HeaderUndecodableSize,
}

func (g *tableGen) key() string {
	if c := g.byte(); int(c) < len(keys) {
		return keys[c]
	}
	return g.str()
}

func (g *tableGen) table(depth int) amqp.Table {
	t := amqp.Table{}
	for range int(g.byte() % 8) {
		t[g.key()] = g.value(depth + 1)
	}
	return t
}

func (g *tableGen) value(depth int) any {
	kinds := byte(14)
	if depth > 4 {
		kinds = 10 // no more nesting
	}
	switch g.byte() % kinds {
	case 0:
		return g.str()
	case 1:
		return int64(g.u64())
	case 2:
		return int32(g.u64())
	case 3:
		return []byte(g.str())
	case 4:
		return g.byte()%2 == 0
	case 5:
		return math.Float64frombits(g.u64())
	case 6:
		return time.Unix(int64(g.u64()), 0) // AMQP timestamps: uint64 seconds
	case 7:
		return nil
	case 8:
		return amqp.Decimal{Scale: g.byte(), Value: int32(g.u64())}
	case 9:
		return int16(g.u64())
	case 10, 11:
		return g.table(depth)
	default:
		n := int(g.byte())
		if n == 255 {
			n = 20_000 // huge array of one value
			v := g.value(depth + 1)
			a := make([]any, n)
			for i := range a {
				a[i] = v
			}
			return a
		}
		a := make([]any, n%16)
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	}
}

// FuzzForeignHeaders feeds arbitrary AMQP header tables to everything that
// reads them: the consumer's delivery, delays, x-death and the dead-letter
// view. Nothing panics, the attempt is at least 1, broker-owned headers
// never reach the application, and every dead letter encodes.
func FuzzForeignHeaders(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 0, 12, 2, 1, 11, 3, 0, 0, 1, 6, 8, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 0, 12, 255, 11, 1, 0, 0, 5})
	f.Add([]byte{3, 1, 0, 1, "5"[0], 2, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 9, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 0, 12, 3, 11, 4, 16, 6, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 14, 0, 5, 'q', 'u', 'e', 'u', 'e', 15, 0, 7, 'e', 'x', 'p', 'i', 'r', 'e', 'd', 17, 1, 0, 0, 0, 0, 0, 0, 0, 3})
	c := &consumer{sub: broker.Subscription{Topic: "t", Group: "g"}, queue: "t.g"}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &tableGen{b: data}
		h := g.table(0)
		m := amqp.Delivery{Headers: h, MessageId: "id", Body: []byte("b"), RoutingKey: "t"}

		d := c.delivery(m, false)
		if d.Attempt < 1 || d.Attempt > driver.MaxAttempt {
			t.Fatalf("attempt %d", d.Attempt)
		}
		// HeadersOnDemand reads the same headers and the same story.
		od := c.delivery(m, true)
		got := maps.Collect(od.AllHeaders())
		if od.Headers != nil || !maps.Equal(got, d.Headers) {
			t.Fatalf("on demand: Headers %v, AllHeaders %v; want nil and %v", od.Headers, got, d.Headers)
		}
		for k, v := range d.Headers {
			if od.Header(k) != v {
				t.Fatalf("on demand: Header(%q) = %q, want %q", k, od.Header(k), v)
			}
		}
		if od.Topic != d.Topic || string(od.Key) != string(d.Key) || (od.Key == nil) != (d.Key == nil) || od.Attempt != d.Attempt || od.LastError != d.LastError ||
			!od.FirstFailureAt.Equal(d.FirstFailureAt) || !od.LastFailureAt.Equal(d.LastFailureAt) {
			t.Fatalf("on demand: delivery %+v, want %+v", od, d)
		}
		for k := range d.Headers {
			if brokerOwned(k) || k == broker.HeaderRemainingDelay {
				t.Fatalf("delivery headers keep %q", k)
			}
		}
		_ = remainingDelay(h)
		_ = intHeader(h, HeaderTierPasses)
		if n := len(parseDeath(h)); n > 64 {
			t.Fatalf("%d x-death entries kept, want at most 64", n)
		}
		dl := DeadLetterFromDelivery("t.g.dlq", m)
		if dl.Entry.Reason == "" || dl.Identity == "" {
			t.Fatalf("dead letter without reason or identity: %+v", dl)
		}
		// A marked delivery (the frame filter's, or a producer's) is an
		// undecodable entry without string headers, never replayed.
		if _, marked := h[HeaderUndecodable]; marked && dl.Entry.Reason != string(driver.ReasonUndecodable) {
			t.Fatalf("marked delivery kept with reason %q", dl.Entry.Reason)
		} else if marked && len(dl.Entry.OriginalHeaders) != 0 {
			t.Fatalf("marked delivery kept with string headers %q", dl.Entry.OriginalHeaders)
		}
		if _, err := kafka.EncodeEnvelope(dl.Entry); err != nil {
			t.Fatalf("dead letter does not encode: %v", err)
		}
		for k := range dl.Entry.OriginalHeaders {
			if strings.HasPrefix(k, broker.HeaderPrefix) {
				t.Fatalf("original headers keep %q", k)
			}
		}
		if err := toTable(driver.FailureHeaders(d, driver.Outcome{Retry: true}, time.Now())).Validate(); err != nil {
			t.Fatalf("republished headers are not a valid table: %v", err)
		}
		if err := storyTable(m, d, driver.Outcome{Reason: driver.ReasonPermanent}, time.Now()).Validate(); err != nil {
			t.Fatalf("a dead-letter copy's headers are not a valid table: %v", err)
		}
		// The exact form is kept, and its string view is the entry's.
		f, err := wire.Decode(dl.Entry.OriginalWire)
		if err != nil {
			t.Fatalf("the entry's wire form does not decode: %v", err)
		}
		if got, want := withoutBrokerOwned(f.Headers).Strings(), dl.Entry.OriginalHeaders; !maps.Equal(got, want) {
			t.Fatalf("wire form's string view %q, entry's headers %q", got, want)
		}
	})
}
