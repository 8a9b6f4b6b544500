package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// version1 is the first byte of what Encode writes. A later format takes
// another number; Decode refuses versions it does not know.
const version1 = 1

// MaxDepth bounds the nesting of tables and arrays that Encode and Decode
// accept (AMQP clients refuse deeper ones: amqp091-go stops at 32).
const MaxDepth = 64

// ErrMalformed is wrapped by Decode errors.
var ErrMalformed = errors.New("wire: malformed encoding")

// Encode renders f as bytes for a store: version 1 is
//
//	0x01, flags (bit 0: properties follow),
//	[properties: content type, content encoding (str), delivery mode,
//	 priority (byte), correlation id, reply-to, expiration (str),
//	 timestamp (flag byte, then 8-byte big-endian Unix seconds when 1),
//	 type, user id, app id (str)],
//	uvarint header count, then per header: name (str), value
//
// where str is a uvarint length and the bytes, and a value is its AMQP type
// letter and its payload: 't' 'b' 'B' one byte; 's' 'u' two bytes; 'I' 'i'
// 'f' four; 'l' 'd' 'T' eight (big-endian, 'T' Unix seconds); 'D' scale
// byte and four bytes; 'S' 'x' str; 'V' nothing; 'A' uvarint count and
// values; 'F' uvarint count and (name, value) pairs.
//
// It fails for a value of no wire type or nesting deeper than MaxDepth;
// values that came from a broker client never do.
func Encode(f Form) ([]byte, error) {
	b := make([]byte, 0, 64)
	b = append(b, version1)
	if f.Props == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		p := f.Props
		b = appendStr(b, p.ContentType)
		b = appendStr(b, p.ContentEncoding)
		b = append(b, p.DeliveryMode, p.Priority)
		b = appendStr(b, p.CorrelationID)
		b = appendStr(b, p.ReplyTo)
		b = appendStr(b, p.Expiration)
		if p.Timestamp.IsZero() {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = binary.BigEndian.AppendUint64(b, uint64(p.Timestamp.Unix()))
		}
		b = appendStr(b, p.Type)
		b = appendStr(b, p.UserID)
		b = appendStr(b, p.AppID)
	}
	var err error
	if b, err = appendTable(b, f.Headers, 0); err != nil {
		return nil, fmt.Errorf("wire: encode: %w", err)
	}
	return b, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTable(b []byte, t Table, depth int) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(t)))
	for _, f := range t {
		b = appendStr(b, f.Name)
		var err error
		if b, err = appendValue(b, f.Value, depth); err != nil {
			return nil, fmt.Errorf("header %q: %w", f.Name, err)
		}
	}
	return b, nil
}

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	be := binary.BigEndian
	switch v := v.(type) {
	case nil:
		return append(b, 'V'), nil
	case bool:
		if v {
			return append(b, 't', 1), nil
		}
		return append(b, 't', 0), nil
	case int8:
		return append(b, 'b', byte(v)), nil
	case uint8:
		return append(b, 'B', v), nil
	case int16:
		return be.AppendUint16(append(b, 's'), uint16(v)), nil
	case uint16:
		return be.AppendUint16(append(b, 'u'), v), nil
	case int32:
		return be.AppendUint32(append(b, 'I'), uint32(v)), nil
	case uint32:
		return be.AppendUint32(append(b, 'i'), v), nil
	case int64:
		return be.AppendUint64(append(b, 'l'), uint64(v)), nil
	case float32:
		return be.AppendUint32(append(b, 'f'), math.Float32bits(v)), nil
	case float64:
		return be.AppendUint64(append(b, 'd'), math.Float64bits(v)), nil
	case Decimal:
		return be.AppendUint32(append(b, 'D', v.Scale), uint32(v.Value)), nil
	case time.Time:
		return be.AppendUint64(append(b, 'T'), uint64(v.Unix())), nil
	case string:
		return appendStr(append(b, 'S'), v), nil
	case []byte:
		return appendStr(append(b, 'x'), string(v)), nil
	case Table:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d", MaxDepth)
		}
		return appendTable(append(b, 'F'), v, depth+1)
	case []any:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d", MaxDepth)
		}
		b = binary.AppendUvarint(append(b, 'A'), uint64(len(v)))
		for i, e := range v {
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, fmt.Errorf("array element %d: %w", i, err)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("value of type %T has no wire type", v)
}

// Decode reads what Encode wrote. Malformed input (any bytes: a damaged
// store row, a foreign envelope) is an error wrapping ErrMalformed, never a
// panic; what it allocates is bounded by a small multiple of len(data).
func Decode(data []byte) (Form, error) {
	d := decoder{b: data}
	var f Form
	if v := d.byte(); v != version1 {
		if d.err == nil {
			d.fail("unknown version %d", v)
		}
		return Form{}, d.err
	}
	switch d.byte() {
	case 0:
	case 1:
		p := &Properties{}
		p.ContentType = d.str()
		p.ContentEncoding = d.str()
		p.DeliveryMode, p.Priority = d.byte(), d.byte()
		p.CorrelationID = d.str()
		p.ReplyTo = d.str()
		p.Expiration = d.str()
		switch d.byte() {
		case 0:
		case 1:
			p.Timestamp = time.Unix(int64(d.uint64()), 0).UTC()
		default:
			d.fail("timestamp flag")
		}
		p.Type = d.str()
		p.UserID = d.str()
		p.AppID = d.str()
		f.Props = p
	default:
		d.fail("flags")
	}
	f.Headers = d.table(0)
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return Form{}, d.err
	}
	return f, nil
}

// decoder reads an encoding; the first error sticks and zero values follow.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	d.b = nil
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail("truncated")
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) byte() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) uint16() uint16 {
	if b := d.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) uint64() uint64 {
	if b := d.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// count reads a uvarint length or count; it cannot exceed the bytes left
// (every element takes at least one), which bounds allocations.
func (d *decoder) count() int {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[k:]
	return int(n)
}

func (d *decoder) str() string { return string(d.take(d.count())) }

func (d *decoder) table(depth int) Table {
	n := d.count()
	if d.err != nil {
		return nil
	}
	t := make(Table, 0, n)
	for range n {
		name := d.str()
		v := d.value(depth)
		if d.err != nil {
			return nil
		}
		t = append(t, Field{Name: name, Value: v})
	}
	return t
}

func (d *decoder) value(depth int) any {
	switch tag := d.byte(); tag {
	case 'V':
		return nil
	case 't':
		switch d.byte() {
		case 0:
			return false
		case 1:
			return true
		}
		d.fail("bool")
	case 'b':
		return int8(d.byte())
	case 'B':
		return d.byte()
	case 's':
		return int16(d.uint16())
	case 'u':
		return d.uint16()
	case 'I':
		return int32(d.uint32())
	case 'i':
		return d.uint32()
	case 'l':
		return int64(d.uint64())
	case 'f':
		return math.Float32frombits(d.uint32())
	case 'd':
		return math.Float64frombits(d.uint64())
	case 'D':
		scale := d.byte()
		return Decimal{Scale: scale, Value: int32(d.uint32())}
	case 'T':
		return time.Unix(int64(d.uint64()), 0).UTC()
	case 'S':
		return d.str()
	case 'x':
		return append([]byte{}, d.take(d.count())...)
	case 'F':
		if depth >= MaxDepth {
			d.fail("nested deeper than %d", MaxDepth)
			return nil
		}
		return d.table(depth + 1)
	case 'A':
		if depth >= MaxDepth {
			d.fail("nested deeper than %d", MaxDepth)
			return nil
		}
		n := d.count()
		if d.err != nil {
			return nil
		}
		a := make([]any, 0, n)
		for range n {
			v := d.value(depth + 1)
			if d.err != nil {
				return nil
			}
			a = append(a, v)
		}
		return a
	default:
		if d.err == nil {
			d.fail("unknown type %q", tag)
		}
	}
	return nil
}
