package e2e

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// This file generates messages as other producers send them, for the
// property tests of foreign_test.go: raw amqp091-go publishings and raw
// kgo records, each with the fate its handler gives it.

// fate is what a foreign message's handler does with it, and so the path
// it takes through redrive.
type fate int

const (
	fateHandled     fate = iota // handled at once
	fateRetried                 // fails twice (retried), then handled
	fateRequeued                // handed back once (broker.Requeue), then handled
	fateDelayed                 // published with a delay of its own, then handled
	fatePermanent               // dead-lettered (permanent), kept, replayed, handled
	fateExhausted               // fails until its retries are spent (max_retries), kept, replayed, handled
	fateExpired                 // too old before a handler sees it (expired), kept, replayed, handled
	fateUndecodable             // RabbitMQ: headers amqp091-go cannot decode (undecodable), kept, replay refused
	fates
)

var fateNames = [...]string{"handled", "retried", "requeued", "delayed", "permanent", "exhausted", "expired", "undecodable"}

func (f fate) String() string { return fateNames[f] }

// firstLife reports whether the message is handled before any dead letter.
func (f fate) firstLife() bool { return f <= fateDelayed }

// replayable reports whether the message is dead-lettered and replayed.
func (f fate) replayable() bool { return f >= fatePermanent && f != fateUndecodable }

// reason is the dead-letter reason of a fate that dead-letters.
func (f fate) reason() driver.Reason {
	return map[fate]driver.Reason{fatePermanent: driver.ReasonPermanent, fateExhausted: driver.ReasonMaxRetries,
		fateExpired: driver.ReasonExpired, fateUndecodable: driver.ReasonUndecodable}[f]
}

// foreignDelay is the delay a delayed message asks for.
const foreignDelay = 300 * time.Millisecond

// foreignSeeds are the seeds of a property run: FOREIGN_SEEDS
// (comma-separated) when set; else 1 and one random seed, then
// FOREIGN_ROUNDS more random ones (make fuzz sets it). Each seed is a
// run of its own, named after it, so that a failure names its seed.
func foreignSeeds(t *testing.T) []int64 {
	if s := os.Getenv("FOREIGN_SEEDS"); s != "" {
		var out []int64
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("FOREIGN_SEEDS: %q: %v", f, err)
			}
			out = append(out, n)
		}
		return out
	}
	rounds := 1
	if s := os.Getenv("FOREIGN_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("FOREIGN_ROUNDS: %q is not a count", s)
		}
		rounds += n
	}
	out := []int64{1}
	for range rounds {
		out = append(out, time.Now().UnixNano()%1_000_000_000+int64(len(out)))
	}
	return out
}

// body returns the body of message i of a run: kind k of empty, text,
// non-UTF-8 bytes, JSON nested deeper than any parser's default limit,
// huge JSON, or pretty JSON. Every kind but empty is unique to (seed, i).
func body(r *rand.Rand, seed int64, i, k int) []byte {
	tag := fmt.Sprintf("%d-%d", seed, i)
	switch k % 6 {
	case 0:
		return nil
	case 1:
		return []byte("text " + tag)
	case 2:
		b := []byte{0xff, 0xfe, 0, 0xc3, 0x28} // not UTF-8
		b = append(b, tag...)
		for range r.Intn(64) {
			b = append(b, byte(r.Intn(256)))
		}
		return b
	case 3:
		depth := 10_000 + i
		return []byte(strings.Repeat("[", depth) + `"` + tag + `"` + strings.Repeat("]", depth))
	case 4:
		var b bytes.Buffer
		b.WriteString(`{"tag":"` + tag + `"`)
		for j := range 8_000 {
			fmt.Fprintf(&b, `,"field-%d":"%s"`, j, strings.Repeat("v", 24))
		}
		b.WriteString("}")
		return b.Bytes()
	default:
		return []byte("{\n  \"tag\": \"" + tag + "\",\n  \"pretty\": true\n}\n")
	}
}

// amqpValue returns a random header value of every type amqp091-go
// writes, nested tables and arrays up to depth levels below it.
func amqpValue(r *rand.Rand, depth int) any {
	kinds := 17
	if depth <= 0 {
		kinds = 15
	}
	switch r.Intn(kinds) {
	case 0:
		return "s-" + strconv.Itoa(r.Int())
	case 1:
		return []byte{0, 0xff, byte(r.Intn(256))}
	case 2:
		return int8(r.Intn(256) - 128)
	case 3:
		return int16(r.Intn(1 << 16))
	case 4:
		return int32(r.Uint32())
	case 5:
		return int64(r.Uint64())
	case 6:
		return uint8(r.Intn(256))
	case 7:
		return uint16(r.Intn(1 << 16))
	case 8:
		return r.Uint32()
	case 9:
		return float32(r.NormFloat64())
	case 10:
		// Not NaN nor ±Inf: RabbitMQ refuses them (the publish is nacked).
		return []float64{math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1), r.NormFloat64()}[r.Intn(4)]
	case 11:
		return r.Intn(2) == 0
	case 12:
		return nil
	case 13:
		return amqp.Decimal{Scale: uint8(r.Intn(10)), Value: int32(r.Uint32())}
	case 14:
		return time.Unix(r.Int63n(1<<34), 0)
	case 15:
		return amqpTable(r, depth-1, r.Intn(5))
	default:
		a := make([]any, r.Intn(5))
		for i := range a {
			a[i] = amqpValue(r, depth-1)
		}
		return a
	}
}

// amqpTable returns a random table of n headers.
func amqpTable(r *rand.Rand, depth, n int) amqp.Table {
	t := amqp.Table{}
	for range n {
		t[fmt.Sprintf("h-%d", r.Intn(1000))] = amqpValue(r, depth)
	}
	return t
}

// nestTables returns n tables nested in one another around v.
func nestTables(n int, v any) any {
	for range n {
		v = amqp.Table{"n": v}
	}
	return v
}

// rabbitCase is one generated RabbitMQ message.
type rabbitCase struct {
	fate fate
	pub  amqp.Publishing
}

// genRabbit returns the messages of one RabbitMQ run of seed: first the
// cases every run has (no headers, an empty table, no properties at all,
// an empty body, every type, tables 32 deep, and three tables the client
// refuses), then n random ones. Each has a message id, a "fid" header or a
// body unique to the run (the one message without any is the empty one).
func genRabbit(seed int64, n int) []rabbitCase {
	r := rand.New(rand.NewSource(seed))
	id := func(i int) string { return fmt.Sprintf("fid-%d-%d", seed, i) }
	all := amqp.Publishing{ContentType: "application/json", ContentEncoding: "identity", DeliveryMode: amqp.Persistent, Priority: 3,
		CorrelationId: "corr", ReplyTo: "replies", Timestamp: time.Unix(1700000000, 0), Type: "t", UserId: "guest", AppId: "other-app"}
	every := amqp.Table{"t-bool": true, "t-int8": int8(-8), "t-uint8": uint8(200), "t-int16": int16(-1600), "t-uint16": uint16(60000),
		"t-int32": int32(-320000), "t-uint32": uint32(4000000000), "t-int64": int64(-1 << 40), "t-float32": float32(1.25),
		"t-float64": math.Pi, "t-decimal": amqp.Decimal{Scale: 2, Value: -1234}, "t-timestamp": time.Unix(1700000000, 0),
		"t-table": amqp.Table{"inner": amqp.Table{"s": "x"}}, "t-array": []any{int32(1), "two", []byte{3}, nil, amqp.Table{}},
		"t-bytes": []byte{0, 0xff}, "t-string": "café", "t-void": nil}
	cases := []rabbitCase{
		{fateRequeued, amqp.Publishing{}}, // nothing at all: the empty body without an id
		{fateRetried, amqp.Publishing{MessageId: id(1), Body: body(r, seed, 1, 2)}},
		{fatePermanent, amqp.Publishing{Headers: amqp.Table{}, MessageId: id(2), Body: body(r, seed, 2, 5)}},
		{fateExhausted, amqp.Publishing{Headers: every, MessageId: id(3), ContentType: "text/plain", Body: body(r, seed, 3, 1)}},
		{fateExpired, amqp.Publishing{Expiration: "1", Body: body(r, seed, 4, 2)}},
		{fateDelayed, amqp.Publishing{Headers: amqp.Table{broker.HeaderRemainingDelay: foreignDelay.Milliseconds()}, Body: body(r, seed, 5, 3)}},
		{fateHandled, amqp.Publishing{MessageId: id(6), Body: body(r, seed, 6, 4)}},
		{fatePermanent, amqp.Publishing{Headers: amqp.Table{"deep": nestTables(32, "bottom")}, MessageId: id(7), Body: body(r, seed, 7, 1)}},
		{fateUndecodable, amqp.Publishing{Headers: amqp.Table{"deep": nestTables(33, "bottom")}, MessageId: id(8), ContentType: "text/plain", Body: body(r, seed, 8, 1)}},
		{fateUndecodable, amqp.Publishing{Headers: amqp.Table{"long": voids(8193)}, Body: body(r, seed, 9, 2)}},
		// Its id comes after the headers: the properties after a refused table are kept.
		{fateUndecodable, amqp.Publishing{Headers: amqp.Table{"array": make([]any, 8193)}, MessageId: id(10), Timestamp: time.Unix(1700000000, 0)}},
	}
	p := all
	p.Headers, p.MessageId, p.Body = every, id(11), body(r, seed, 11, 5)
	cases = append(cases, rabbitCase{fateRequeued, p})
	for i, start := len(cases), len(cases); i < start+n; i++ {
		c := rabbitCase{fate: fate(r.Intn(int(fateUndecodable)))}
		if c.fate == fateExpired || c.fate == fateDelayed {
			c.fate = fateHandled // the fixed cases cover them; random ones keep runs short
		}
		if r.Intn(3) > 0 {
			c.pub = all
		}
		if r.Intn(4) > 0 {
			c.pub.Headers = amqpTable(r, 3, r.Intn(8))
			c.pub.Headers["fid"] = id(i)
		} else {
			c.pub.MessageId = id(i)
		}
		c.pub.Body = body(r, seed, i, 1+r.Intn(5))
		if r.Intn(3) == 0 {
			c.pub.Body = nil // an empty body, told apart by its id
		}
		cases = append(cases, c)
	}
	return cases
}

// voids returns a table of n void entries, named k0 ...
func voids(n int) amqp.Table {
	out := amqp.Table{}
	for i := range n {
		out[fmt.Sprint("k", i)] = nil
	}
	return out
}

// kafkaCase is one generated Kafka record.
type kafkaCase struct {
	fate fate
	rec  *kgo.Record
}

// genKafka returns the records of one Kafka run of seed: first the cases
// every run has (no headers with a null key and value, no headers, repeated
// and binary header names with null values, empty key and value, deep and
// huge JSON, an old record), then n random ones. Each has a "fid" header,
// a key or a value unique to the run (the one record without any is the
// null one).
func genKafka(seed int64, n int) []kafkaCase {
	r := rand.New(rand.NewSource(seed))
	id := func(i int) []byte { return fmt.Appendf(nil, "fid-%d-%d", seed, i) }
	hs := func(i int, kv ...string) []kgo.RecordHeader {
		out := []kgo.RecordHeader{{Key: "fid", Value: id(i)}}
		for j := 0; j+1 < len(kv); j += 2 {
			h := kgo.RecordHeader{Key: kv[j]}
			if kv[j+1] != "<null>" {
				h.Value = []byte(kv[j+1])
			}
			out = append(out, h)
		}
		return out
	}
	due := func() []kgo.RecordHeader {
		return []kgo.RecordHeader{{Key: driver.HeaderDueAt, Value: []byte(time.Now().Add(foreignDelay).UTC().Format(time.RFC3339Nano))}}
	}
	cases := []kafkaCase{
		{fateRequeued, &kgo.Record{}}, // no headers, null key and value
		{fateRetried, &kgo.Record{Key: id(1), Value: body(r, seed, 1, 2)}},
		{fatePermanent, &kgo.Record{Key: []byte{0, 0xff}, Value: body(r, seed, 2, 5),
			Headers: hs(2, "dup", "first", "\x00\xffbin", "\xff", "dup", "second", "null", "<null>", "empty", "", "", "empty name")}},
		{fateExhausted, &kgo.Record{Key: []byte{}, Value: []byte{}, Headers: hs(3, "a", "1")}},
		{fateExpired, &kgo.Record{Value: body(r, seed, 4, 1), Timestamp: time.Now().Add(-2 * time.Hour)}},
		{fateDelayed, &kgo.Record{Key: id(5), Value: body(r, seed, 5, 3), Headers: due()}},
		{fateHandled, &kgo.Record{Value: body(r, seed, 6, 4), Headers: hs(6)}},
	}
	for i, start := len(cases), len(cases); i < start+n; i++ {
		c := kafkaCase{fate: fate(r.Intn(int(fateUndecodable))), rec: &kgo.Record{}}
		if c.fate == fateExpired || c.fate == fateDelayed {
			c.fate = fateHandled
		}
		switch r.Intn(3) {
		case 0:
			c.rec.Key = id(i)
		case 1:
			c.rec.Headers = hs(i)
			for range r.Intn(6) {
				h := kgo.RecordHeader{Key: []string{"dup", "a", "\xff", "", "traceparent"}[r.Intn(5)]}
				if r.Intn(4) > 0 {
					h.Value = body(r, seed, i, r.Intn(3))
				}
				c.rec.Headers = append(c.rec.Headers, h)
			}
		default:
			c.rec.Value = body(r, seed, i, 1+r.Intn(5))
			c.rec.Key = []byte{}
		}
		if c.rec.Value == nil && r.Intn(2) == 0 {
			c.rec.Value = body(r, seed, i, 1+r.Intn(5))
		}
		cases = append(cases, c)
	}
	return cases
}
