package framefilter

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// Field encoders of the tests: AMQP 0-9-1 table bytes written by hand, so
// that a test can write what no client library writes.

func longstr(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// tbl is a field table (its long-string length and its entries).
func tbl(entries ...[]byte) []byte { return longstr(bytes.Join(entries, nil)) }

// ent is a table entry: a short-string name and a value.
func ent(name string, value []byte) []byte { return append(appendShortstr(nil, name), value...) }

func vF(entries ...[]byte) []byte { return append([]byte{'F'}, tbl(entries...)...) }
func vA(values ...[]byte) []byte {
	return append([]byte{'A'}, longstr(bytes.Join(values, nil))...)
}
func vS(s string) []byte { return append([]byte{'S'}, longstr([]byte(s))...) }
func vx(b []byte) []byte { return append([]byte{'x'}, longstr(b)...) }
func vI(n int32) []byte  { return binary.BigEndian.AppendUint32([]byte{'I'}, uint32(n)) }
func vl(n int64) []byte  { return binary.BigEndian.AppendUint64([]byte{'l'}, uint64(n)) }
func vV() []byte         { return []byte{'V'} }
func vt(b bool) []byte   { return []byte{'t', map[bool]byte{false: 0, true: 1}[b]} }
func vD(s byte, v int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{'D', s}, uint32(v))
}

// nested is a value of n tables nested in one another.
func nested(n int) []byte {
	v := vS("bottom")
	for range n {
		v = vF(ent("n", v))
	}
	return v
}

// nestedArrays is a value of n arrays nested in one another.
func nestedArrays(n int) []byte {
	v := vI(1)
	for range n {
		v = vA(v)
	}
	return v
}

// many is a table value of n entries named name0..., or with the names
// of names when given.
func many(n int, name func(i int) string) []byte {
	es := make([][]byte, n)
	for i := range es {
		es[i] = ent(name(i), vV())
	}
	return vF(es...)
}

// chunked is an array holding a string that claims 100,000 bytes of
// which the array holds only have: amqp091-go reads strings in 64 KiB
// steps, and one cut exactly at a step reads as io.EOF.
func chunked(have int) []byte {
	s := binary.BigEndian.AppendUint32([]byte{'S'}, 100000)
	s = append(s, bytes.Repeat([]byte{'s'}, have)...)
	return append(binary.BigEndian.AppendUint32([]byte{'A'}, uint32(len(s))), s...)
}

func distinct(i int) string { return fmt.Sprint("k", i) }

// withHeaders is a content header with the headers table t (bytes of a
// field table) and a message id and timestamp after it.
func withHeaders(t []byte) []byte {
	props := append([]byte(nil), t...)
	props = appendShortstr(props, "msg-1")
	props = binary.BigEndian.AppendUint64(props, 1700000000)
	return header(4, flagHeaders|flagMessageID|flagTimestamp, props)
}

// checkCases are content headers with what amqp091-go does with them:
// whether it reads them (the differential test checks each against the
// library itself).
var checkCases = []struct {
	name    string
	payload []byte
	ok      bool
	why     string // part of Check's reason when refused
}{
	{"no properties", header(4, 0, nil), true, ""},
	{"empty table", withHeaders(tbl()), true, ""},
	{"every type", withHeaders(tbl(
		ent("S", vS("café")), ent("I", vI(-3)), ent("l", vl(math.MinInt64)), ent("V", vV()), ent("t", vt(true)),
		ent("D", vD(2, -1234)), ent("x", vx([]byte{0, 0xff})), ent("T", binary.BigEndian.AppendUint64([]byte{'T'}, 1700000000)),
		ent("b", []byte{'b', 0x80}), ent("B", []byte{'B', 0xff}), ent("s", []byte{'s', 0x80, 0}), ent("u", []byte{'u', 0xff, 0xff}),
		ent("i", []byte{'i', 0xff, 0xff, 0xff, 0xff}), ent("f", []byte{'f', 0x3f, 0x80, 0, 0}), ent("d", []byte{'d', 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}),
		ent("A", vA(vI(1), vS("two"), vV(), vF(ent("k", vt(false))))), ent("F", vF(ent("inner", vS("x")))),
	)), true, ""},
	{"tables 32 deep", withHeaders(tbl(ent("deep", nested(32)))), true, ""},
	{"tables 33 deep", withHeaders(tbl(ent("deep", nested(33)))), false, "32 levels deep"},
	{"arrays 32 deep", withHeaders(tbl(ent("deep", nestedArrays(32)))), true, ""},
	{"arrays 33 deep", withHeaders(tbl(ent("deep", nestedArrays(33)))), false, "32 levels deep"},
	{"an empty table 33 deep", withHeaders(tbl(ent("deep", func() []byte {
		v := vF()
		for range 32 {
			v = vF(ent("n", v))
		}
		return v
	}()))), false, "32 levels deep"},
	{"8192 entries", withHeaders(tbl(ent("m", many(8192, distinct)))), true, ""},
	{"8193 entries", withHeaders(tbl(ent("m", many(8193, distinct)))), false, "more than 8192 entries"},
	{"8193 entries, 8192 names (an early repeat)", withHeaders(tbl(ent("m", many(8193, func(i int) string { return distinct(max(i-1, 0)) })))), true, ""},
	{"8193 entries, 8192 names (the last repeats)", withHeaders(tbl(ent("m", many(8193, func(i int) string { return distinct(min(i, 8191)) })))), false, "more than 8192 entries"},
	{"8193 top-level headers", withHeaders(func() []byte {
		es := make([][]byte, 8193)
		for i := range es {
			es[i] = ent(distinct(i), vV())
		}
		return tbl(es...)
	}()), false, "more than 8192 entries"},
	{"array of 8192", withHeaders(tbl(ent("a", vA(bytes.Split(bytes.Repeat([]byte{'V'}, 8192), nil)...)))), true, ""},
	{"array of 8193", withHeaders(tbl(ent("a", vA(bytes.Split(bytes.Repeat([]byte{'V'}, 8193), nil)...)))), false, "more than 8192 elements"},
	{"unknown type", withHeaders(tbl(ent("z", []byte{'Z', 1, 2}))), false, "unknown type"},
	{"negative byte array", withHeaders(tbl(ent("x", []byte{'x', 0xff, 0xff, 0xff, 0xff}))), false, "negative length"},
	{"string over 2 GiB", withHeaders(tbl(ent("s", []byte{'S', 0x80, 0, 0, 0}))), false, "over 2 GiB"},
	{"name past the table's end", withHeaders(longstr([]byte{9, 'a'})), false, "cut short"},
	{"value past the table's end", withHeaders(longstr(append(appendShortstr(nil, "k"), 'I', 0))), false, "cut short"},
	{"a value without its type", withHeaders(longstr(appendShortstr(nil, "k"))), false, "cut short"},
	{"table longer than the frame", header(4, flagHeaders, []byte{0, 0, 1, 0, 1, 'k', 'V'}), false, "cut short in its headers"},
	{"array ending in a bare type octet", withHeaders(tbl(ent("a", append([]byte{'A', 0, 0, 0, 3}, 'V', 'V', 't')))), true, ""},
	{"array ending in half an integer", withHeaders(tbl(ent("a", append([]byte{'A', 0, 0, 0, 3}, 'V', 'I', 0)))), false, "cut short"},
	{"array holding a table cut short", withHeaders(tbl(
		// The table's name length is its last octet: the name reads as
		// io.EOF, which ends the array without an error.
		ent("a", append([]byte{'A', 0, 0, 0, 6}, 'F', 0, 0, 0, 1, 5)),
	)), true, ""},
	{"array holding a table whose name is cut short", withHeaders(tbl(
		ent("a", append([]byte{'A', 0, 0, 0, 7}, 'F', 0, 0, 0, 2, 5, 'x')),
	)), false, "cut short"},
	{"array whose table is cut short, then more after the array", withHeaders(tbl(
		// The array ends at the table; the reader goes on in the
		// table's parent right after the table, inside the array's size.
		ent("a", append([]byte{'A', 0, 0, 0, 8}, 'F', 0, 0, 0, 1, 5, 1, 'k')),
		ent("z", vV()),
	)), false, ""},
	{"array ending in a string cut at a 64 KiB step", withHeaders(tbl(ent("a", chunked(65536)))), true, ""},
	{"array ending in a string cut past a 64 KiB step", withHeaders(tbl(ent("a", chunked(65537)))), false, "cut short"},
	{"content type past the frame", header(4, flagContentType, []byte{200, 'a'}), false, "content-type"},
	{"timestamp cut short", header(4, flagHeaders|flagTimestamp, append(tbl(), 0, 0, 0)), false, "timestamp"},
	{"too short for its flags", []byte{0, 60, 0, 0, 0}, false, "shorter than"},
}

// TestCheck: Check's verdict on each case, and its reason.
func TestCheck(t *testing.T) {
	for _, c := range checkCases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(c.payload)
			if r.OK() != c.ok || !strings.Contains(r.Why, c.why) {
				t.Errorf("Check = ok %v, %q; want ok %v, a reason with %q", r.OK(), r.Why, c.ok, c.why)
			}
		})
	}
}

// TestCheckAgreesWithTheClient delivers each case (but those too short
// for a body size) from a test server to amqp091-go itself, unfiltered
// and through Wrap. Unfiltered, the client reads the message exactly when
// Check accepts it, and closes the connection otherwise. Filtered, the
// message always arrives with its body and is followed by a plain one: as
// it was sent when Check accepts it, with the marker (reason, refused
// bytes and their size) and the properties read before the refused one
// otherwise.
func TestCheckAgreesWithTheClient(t *testing.T) {
	for _, c := range checkCases {
		if len(c.payload) < headerLen {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			agree(t, c.payload, clientFrameSize)
		})
	}
}

// agree runs the differential check of one content header payload (whose
// body size must be 4) with a server of frame size frameMax.
func agree(t *testing.T, payload []byte, frameMax uint32) {
	t.Helper()
	body := []byte("body")
	plain := header(4, flagMessageID, appendShortstr(nil, "next"))
	ds := func(w *bufio.Writer) {
		writeDelivery(w, 1, 1, delivery{payload, body})
		writeDelivery(w, 1, 2, delivery{plain, body})
	}
	r := Check(payload)
	oversize := frameMax > 0 && len(payload) > int(frameMax)-8
	raw := connect(t, false, frameMax, ds, nil)
	ref, read := raw.next(t)
	if read != (r.OK() && !oversize) {
		t.Fatalf("amqp091-go read the message: %v; Check: ok %v %q (oversize %v)", read, r.OK(), r.Why, oversize)
	}
	var whys []string
	f := connect(t, true, frameMax, ds, func(why string) { whys = append(whys, why) })
	got, ok := f.next(t)
	if !ok {
		t.Fatal("filtered: the connection closed; want the message delivered")
	}
	if !bytes.Equal(got.Body, body) {
		t.Errorf("filtered: body %q, want %q", got.Body, body)
	}
	if next, ok := f.next(t); !ok || next.MessageId != "next" {
		t.Errorf("filtered: the message after it: %v %q; want it delivered", ok, next.MessageId)
	}
	if read {
		if !reflect.DeepEqual(got.Headers, ref.Headers) || got.MessageId != ref.MessageId || !got.Timestamp.Equal(ref.Timestamp) || len(whys) != 0 {
			t.Errorf("filtered: %+v, want as read unfiltered %+v (refusals %q)", got, ref, whys)
		}
		return
	}
	why, _ := got.Headers[HeaderUndecodable].(string)
	size, _ := got.Headers[HeaderRawSize].(int64)
	kept, _ := got.Headers[HeaderRaw].([]byte)
	if why == "" || len(whys) != 1 || whys[0] != why || size < int64(len(kept)) || len(kept) > MaxRaw {
		t.Errorf("filtered: marker %q (reported %q), %d of %d refused bytes kept; want a reason, reported once, and the bytes", why, whys, len(kept), size)
	}
}

// TestOversizeHeader: a content header over the negotiated frame size
// (RabbitMQ adds x-death to a table near the limit) closes an unfiltered
// connection; filtered, it arrives marked, what fits of it kept.
func TestOversizeHeader(t *testing.T) {
	big := withHeaders(tbl(ent("big", vS(strings.Repeat("x", 5000)))))
	if Check(big).OK() != true {
		t.Fatal("the table itself must be readable")
	}
	agree(t, big, 4096)
}

// FuzzCheck compares Check with amqp091-go on generated content headers:
// property flags and bytes from the fuzzer, a headers table from a
// generator that reaches every field type, deep nesting, long containers
// and values cut short. It runs the differential check of agree (two
// connections per input): briefly in make test (the seeds), longer in
// make fuzz.
func FuzzCheck(f *testing.F) {
	for _, c := range checkCases {
		if len(c.payload) >= headerLen && len(c.payload) < 4096 {
			f.Add(c.payload[12:])
		}
	}
	f.Fuzz(func(t *testing.T, rest []byte) {
		if len(rest) < 2 {
			return
		}
		payload := append([]byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}, rest...)
		// Check alone never panics; the client comparison needs a server.
		Check(payload)
		agree(t, payload, clientFrameSize)
	})
}
