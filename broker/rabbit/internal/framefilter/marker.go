package framefilter

import (
	"encoding/binary"
)

// The headers of the marker a refused content header is rewritten with.
// They are x-redrive-* headers: redrive's own, not the application's.
const (
	// HeaderUndecodable says why amqp091-go could not read the message's
	// properties (a string).
	HeaderUndecodable = "x-redrive-undecodable"
	// HeaderRaw holds the bytes that were refused (a byte array), at most
	// MaxRaw of them: the headers table's content when it alone was
	// refused, else the properties from the refused one on.
	HeaderRaw = "x-redrive-undecodable-headers"
	// HeaderRawSize is the size in bytes of what was refused (a long
	// integer), which HeaderRaw holds whole only up to MaxRaw.
	HeaderRawSize = "x-redrive-undecodable-size"
)

// MaxRaw bounds the refused bytes a marker keeps.
const MaxRaw = 64 << 10

// minFrame is the least frame size AMQP allows a peer to negotiate: a
// rewritten payload of at most minFrame-8 bytes always fits a frame.
const minFrame = 4096

// appendShortstr appends a short string (s is at most 255 bytes).
func appendShortstr(b []byte, s string) []byte {
	return append(append(b, byte(len(s))), s...)
}

// markerEntries appends the marker's table entries: why, raw and size.
func markerEntries(b []byte, why string, raw []byte, size int) []byte {
	b = appendShortstr(b, HeaderUndecodable)
	b = append(b, 'S')
	b = binary.BigEndian.AppendUint32(b, uint32(len(why)))
	b = append(b, why...)
	b = appendShortstr(b, HeaderRaw)
	b = append(b, 'x')
	b = binary.BigEndian.AppendUint32(b, uint32(len(raw)))
	b = append(b, raw...)
	b = appendShortstr(b, HeaderRawSize)
	b = append(b, 'l')
	return binary.BigEndian.AppendUint64(b, uint64(size))
}

// markerOverhead is what markerEntries adds besides why and raw.
const markerOverhead = 1 + len(HeaderUndecodable) + 1 + 4 + 1 + len(HeaderRaw) + 1 + 4 + 1 + len(HeaderRawSize) + 1 + 8

// Rewrite appends to dst a content header payload amqp091-go reads in
// place of payload, which Check refused (r), at most limit bytes long
// (limit >= minFrame-8): its class id, weight and body size as they were,
// so that the body that follows is read as before; the properties read
// before the refused one, but the headers; and a headers table of the
// marker's entries alone.
func Rewrite(dst, payload []byte, r Result, limit int) []byte {
	limit = max(limit, minFrame-8)
	raw := payload[r.raw[0]:r.raw[1]]
	// The properties read, but the headers table: the marker replaces it
	// (entries added to a table that was read could change how it reads:
	// an array whose size runs past the table's end ends with the table).
	props := make([]span, 0, r.n)
	kept := 0
	for _, p := range r.props[:r.n] {
		if p.flag != flagHeaders {
			props = append(props, p)
			kept += p.end - p.start
		}
	}
	room := limit - (headerLen + kept + 4 + markerOverhead + len(r.Why))
	if room < 0 {
		// Only a frame already at its limit gets here: keep the marker.
		props, room = nil, limit-(headerLen+4+markerOverhead+len(r.Why))
	}
	if len(raw) > min(room, MaxRaw) {
		raw = raw[:min(room, MaxRaw)]
	}
	dst = append(dst, payload[:12]...) // class id, weight, body size
	at := len(dst)
	dst = append(dst, 0, 0) // the flags, below
	var flags uint16
	for _, p := range properties {
		if p.flag == flagHeaders {
			start := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst = markerEntries(dst, r.Why, raw, r.raw[1]-r.raw[0])
			binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
			flags |= flagHeaders
			continue
		}
		for _, s := range props {
			if s.flag == p.flag {
				dst = append(dst, payload[s.start:s.end]...)
				flags |= p.flag
			}
		}
	}
	binary.BigEndian.PutUint16(dst[at:], flags)
	return dst
}
