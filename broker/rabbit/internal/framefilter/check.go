package framefilter

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The limits of amqp091-go's reader (read.go: maxFieldDepth,
// maxContainerElements), which Check mirrors.
const (
	// MaxDepth is how deeply tables and arrays may nest below the headers
	// table.
	MaxDepth = 32
	// MaxElements is how many entries a table (distinct names) or an
	// array may hold.
	MaxElements = 8192
)

// readChunk is the step in which amqp091-go's readBytes reads a string or
// a byte array: a value cut short exactly at a step boundary reads as
// io.EOF (which ends an array), elsewhere as an error.
const readChunk = 64 << 10

// Property flags of a content header, in wire order (AMQP 0-9-1 basic
// class; amqp091-go types.go).
const (
	flagContentType     = 0x8000
	flagContentEncoding = 0x4000
	flagHeaders         = 0x2000
	flagDeliveryMode    = 0x1000
	flagPriority        = 0x0800
	flagCorrelationID   = 0x0400
	flagReplyTo         = 0x0200
	flagExpiration      = 0x0100
	flagMessageID       = 0x0080
	flagTimestamp       = 0x0040
	flagType            = 0x0020
	flagUserID          = 0x0010
	flagAppID           = 0x0008
	flagReserved1       = 0x0004
)

// property is one basic property: its flag, name and encoding.
type property struct {
	flag uint16
	name string
	kind byte // 's' shortstr, 'F' table, '1' one octet, '8' eight octets
}

var properties = [...]property{
	{flagContentType, "content-type", 's'},
	{flagContentEncoding, "content-encoding", 's'},
	{flagHeaders, "headers", 'F'},
	{flagDeliveryMode, "delivery-mode", '1'},
	{flagPriority, "priority", '1'},
	{flagCorrelationID, "correlation-id", 's'},
	{flagReplyTo, "reply-to", 's'},
	{flagExpiration, "expiration", 's'},
	{flagMessageID, "message-id", 's'},
	{flagTimestamp, "timestamp", '8'},
	{flagType, "type", 's'},
	{flagUserID, "user-id", 's'},
	{flagAppID, "app-id", 's'},
	{flagReserved1, "cluster-id", 's'},
}

// headerLen is the fixed start of a content header's payload: class id,
// weight, body size and property flags.
const headerLen = 2 + 2 + 8 + 2

// verdict is how a read ends, as amqp091-go's reader sees it: ok; eof
// (nothing at all was left to read: io.EOF, which ends an array without
// an error); or bad (the reader fails: the connection closes).
type verdict uint8

const (
	ok verdict = iota
	eof
	bad
)

// span is where a property lies in a content header's payload.
type span struct {
	flag       uint16
	start, end int
}

// Result is what Check found in a content header's payload.
type Result struct {
	// Why is empty when amqp091-go reads the payload; otherwise why it
	// does not, in words for an operator.
	Why string
	// props[:n] are the properties read before the one refused (all of
	// them when the headers table alone is refused), with where they lie;
	// a headers table is among them only when its content was read (a
	// rewrite leaves it out all the same).
	props [len(properties)]span
	n     int
	// raw is the span of what was refused, kept for the operator: the
	// headers table's content when only its content is refused, else
	// everything from the refused property on (from the headers table on
	// when it came before).
	raw [2]int
}

// OK reports whether amqp091-go reads the payload.
func (r Result) OK() bool { return r.Why == "" }

// checker walks AMQP field tables the way amqp091-go's reader does.
type checker struct {
	b   []byte
	why string // the first refusal
}

func (c *checker) refuse(format string, args ...any) verdict {
	if c.why == "" {
		c.why = fmt.Sprintf(format, args...)
	}
	return bad
}

// take reads n bytes at pos of a reader that ends at end, as io.ReadFull
// does: all of them, none at all (eof), or some (bad).
func take(pos, end, n int) (int, verdict) {
	switch left := end - pos; {
	case left >= n:
		return pos + n, ok
	case left == 0:
		return pos, eof
	}
	return end, bad
}

// readBytes reads n bytes at pos as amqp091-go's readBytes does: in
// readChunk steps, each an io.ReadFull.
func readBytes(pos, end, n int) (int, verdict) {
	left := end - pos
	if left >= n {
		return pos + n, ok
	}
	if left%readChunk == 0 {
		return end, eof
	}
	return end, bad
}

// shortstr reads a short string (a length octet and the bytes).
func (c *checker) shortstr(pos, end int) (int, verdict) {
	pos, v := take(pos, end, 1)
	if v != ok {
		return pos, v
	}
	return readBytes(pos, end, int(c.b[pos-1]))
}

// longstr reads a long string; content is where its bytes start.
func (c *checker) longstr(pos, end int) (next, content int, v verdict) {
	if pos, v = take(pos, end, 4); v != ok {
		return pos, pos, v
	}
	n := binary.BigEndian.Uint32(c.b[pos-4:])
	if n > math.MaxInt32 {
		return pos, pos, c.refuse("a string of the headers claims %d bytes, over 2 GiB", n)
	}
	next, v = readBytes(pos, end, int(n))
	return next, pos, v
}

// table reads a field table at pos (its long-string length, then its
// entries) at depth.
func (c *checker) table(pos, end, depth int) (int, verdict) {
	if depth > MaxDepth {
		return pos, c.refuse("the headers nest tables and arrays more than %d levels deep", MaxDepth)
	}
	next, content, v := c.longstr(pos, end)
	if v != ok {
		return next, v
	}
	return next, c.entries(content, next, depth)
}

// entries reads a table's entries (names and values) from pos to end: the
// table's content, as amqp091-go reads it from a buffer of its own.
func (c *checker) entries(pos, end, depth int) verdict {
	start, n := pos, 0
	var names map[string]struct{} // built once n reaches MaxElements
	for pos < end {
		at := pos
		var v verdict
		if pos, v = c.shortstr(pos, end); v != ok {
			return v
		}
		name := c.b[at+1 : pos]
		if pos, v = c.field(pos, end, depth); v != ok {
			return v
		}
		if n < MaxElements {
			n++
			continue
		}
		// The reader refuses an entry once the table holds MaxElements
		// distinct names: count them (only tables this long pay for it).
		if names == nil {
			names = c.names(start, at, depth)
		}
		if len(names) >= MaxElements {
			return c.refuse("a table of the headers has more than %d entries", MaxElements)
		}
		names[string(name)] = struct{}{}
	}
	return ok
}

// names returns the distinct names of the entries between pos and end,
// which were read without a fault.
func (c *checker) names(pos, end, depth int) map[string]struct{} {
	names := make(map[string]struct{}, MaxElements)
	for pos < end {
		at := pos
		pos, _ = c.shortstr(pos, end)
		names[string(c.b[at+1:pos])] = struct{}{}
		pos, _ = c.field(pos, end, depth)
	}
	return names
}

// array reads an array at pos (its byte size, then values until the size
// is spent or a value finds nothing to read) at depth, and returns where
// the reader stands after it.
func (c *checker) array(pos, end, depth int) (int, verdict) {
	if depth > MaxDepth {
		return pos, c.refuse("the headers nest tables and arrays more than %d levels deep", MaxDepth)
	}
	var v verdict
	if pos, v = take(pos, end, 4); v != ok {
		return pos, v
	}
	size := binary.BigEndian.Uint32(c.b[pos-4:])
	if size > math.MaxInt32 {
		return pos, c.refuse("an array of the headers claims %d bytes, over 2 GiB", size)
	}
	lim := min(end, pos+int(size))
	for n := 0; ; n++ {
		if pos, v = c.field(pos, lim, depth); v == eof {
			return pos, ok
		} else if v != ok {
			return pos, v
		}
		if n >= MaxElements {
			return pos, c.refuse("an array of the headers has more than %d elements", MaxElements)
		}
	}
}

// field reads one value (its type octet and its bytes) at depth.
func (c *checker) field(pos, end, depth int) (int, verdict) {
	pos, v := take(pos, end, 1)
	if v != ok {
		return pos, v
	}
	switch typ := c.b[pos-1]; typ {
	case 't', 'B', 'b':
		return take(pos, end, 1)
	case 's', 'u':
		return take(pos, end, 2)
	case 'I', 'i', 'f':
		return take(pos, end, 4)
	case 'l', 'd', 'T':
		return take(pos, end, 8)
	case 'D':
		if pos, v = take(pos, end, 1); v != ok {
			return pos, v
		}
		return take(pos, end, 4)
	case 'S':
		next, _, v := c.longstr(pos, end)
		return next, v
	case 'A':
		return c.array(pos, end, depth+1)
	case 'F':
		return c.table(pos, end, depth+1)
	case 'x':
		if pos, v = take(pos, end, 4); v != ok {
			return pos, v
		}
		n := int32(binary.BigEndian.Uint32(c.b[pos-4:]))
		if n < 0 {
			return pos, c.refuse("a byte array of the headers has a negative length")
		}
		return readBytes(pos, end, int(n))
	case 'V':
		return pos, ok
	default:
		return pos, c.refuse("the headers hold a value of unknown type %q", typ)
	}
}

// Check reads a content header frame's payload (class id, weight, body
// size, property flags and properties) as amqp091-go's reader does, and
// says whether the reader accepts it. It allocates nothing for a payload
// the reader accepts, unless a table of it holds more than MaxElements
// entries.
func Check(payload []byte) Result {
	c := checker{b: payload}
	end := len(payload)
	if end < headerLen {
		return Result{Why: fmt.Sprintf("the content header is %d bytes, shorter than its fixed %d", end, headerLen), raw: [2]int{0, end}}
	}
	flags := binary.BigEndian.Uint16(payload[12:])
	var r Result
	pos := headerLen
	for _, p := range properties {
		if flags&p.flag == 0 {
			continue
		}
		start := pos
		var v verdict
		switch p.kind {
		case 's':
			pos, v = c.shortstr(pos, end)
		case '1':
			pos, v = take(pos, end, 1)
		case '8':
			pos, v = take(pos, end, 8)
		case 'F':
			var content int
			if pos, content, v = c.longstr(pos, end); v == ok {
				if c.entries(content, pos, 0) != ok {
					// The table's content is refused, but its length
					// holds: the properties after it can still be read.
					if c.why == "" {
						c.why = "the headers table is cut short: a name or value runs past its end"
					}
					r.Why, r.raw = c.why, [2]int{content, pos}
					continue
				}
			}
		}
		if v != ok {
			if c.why == "" {
				c.why = fmt.Sprintf("the content header is cut short in its %s property", p.name)
			}
			if r.Why == "" {
				// What was refused, from the headers on when they were
				// read: a rewrite carries no table but the marker.
				r.raw = [2]int{start, end}
				for _, s := range r.props[:r.n] {
					if s.flag == flagHeaders {
						r.raw[0] = s.start
					}
				}
			}
			r.Why = c.why
			return r
		}
		r.props[r.n] = span{p.flag, start, pos}
		r.n++
	}
	return r
}
