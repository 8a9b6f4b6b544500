// Package framefilter keeps one message that amqp091-go cannot decode from
// closing the connection that receives it.
//
// amqp091-go reads a delivery's properties (its content header frame) in
// the connection's reader: a headers table nested deeper than MaxDepth,
// a table or array over MaxElements, a value of unknown type or one that
// runs past its table fails the frame, and the library closes the whole
// connection (FrameError). The broker then delivers the same message to
// the next connection, which dies the same way: one message published by
// anyone stops a consumer for good. The same happens with a content header
// larger than the negotiated frame size (RabbitMQ adding x-death to a
// table near the limit).
//
// Conn sits between the transport (TCP or TLS, plaintext side) and the
// library. It follows the frame stream, passes every frame through as it
// is, and reads only content header frames: each is checked as the
// library would read it (Check) and, when the library would refuse it, is
// rewritten (Rewrite) into one it reads, with the same body size and the
// properties that could be read, and a marker in its headers
// (HeaderUndecodable, the refused bytes in HeaderRaw). The consumer that
// sees the marker moves the message aside instead of calling a handler.
package framefilter

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// AMQP frame types and the frame end octet.
const (
	frameMethod    = 1
	frameHeader    = 2
	frameBody      = 3
	frameHeartbeat = 8
	frameEnd       = 0xCE
)

// bufferSize is the read buffer of a Conn: a content header up to this
// size (the frame, 7 + payload + 1) is checked where it is buffered.
const bufferSize = 32 << 10

// Conn is a net.Conn whose reads pass the AMQP frames of the wrapped
// connection, content headers the client cannot read rewritten (see the
// package comment). Writes, deadlines and Close are the wrapped
// connection's. Like a net.Conn read by one reader, Read is not safe for
// concurrent use.
type Conn struct {
	net.Conn
	r *bufio.Reader
	// left is what remains to pass of the frame being read.
	left int
	// out is a frame to hand out before reading on: a rewritten content
	// header, or one too large for the buffer.
	out []byte
	// scratch holds frames that do not fit the buffer and rewrites.
	scratch []byte
	// raw: the stream is not (or no longer) AMQP frames the filter
	// knows; everything passes as it is, and the client fails on it.
	raw bool
	// client is the frame size the client proposes (its Config.FrameSize),
	// frameMax the one negotiated (from connection.tune), 0 = no limit.
	client, frameMax int
	refused          func(why string)
}

// Wrap returns conn filtered. frameSize is the frame size the client
// proposes (amqp091-go's Config.FrameSize; 0 = none); refused, when not
// nil, is called with the reason of each content header rewritten.
func Wrap(conn net.Conn, frameSize int, refused func(why string)) *Conn {
	return &Conn{Conn: conn, r: bufio.NewReaderSize(conn, bufferSize), client: max(frameSize, 0), refused: refused}
}

// Read implements net.Conn.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		switch {
		case len(c.out) > 0:
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		case c.raw:
			return c.r.Read(p)
		case c.left > 0:
			if len(p) > c.left {
				p = p[:c.left]
			}
			n, err := c.r.Read(p)
			c.left -= n
			return n, err
		}
		if err := c.next(); err != nil {
			return 0, err
		}
	}
}

// next reads the header of the next frame and decides how it passes.
func (c *Conn) next() error {
	h, err := c.r.Peek(7)
	if err != nil {
		if len(h) > 0 {
			c.raw = true // a partial frame: the client reads it and its error
			return nil
		}
		return err
	}
	size := int(binary.BigEndian.Uint32(h[3:]))
	switch h[0] {
	case frameHeader:
		return c.header(size)
	case frameMethod:
		if h[1] == 0 && h[2] == 0 {
			c.tune(size)
		}
	case frameBody, frameHeartbeat:
	default:
		c.raw = true // not a frame: the client fails on it
		return nil
	}
	c.left = 7 + size + 1
	return nil
}

// tune learns the frame size the client and the server settle on from the
// server's connection.tune (class 10, method 30: channel-max, frame-max,
// heartbeat), as amqp091-go negotiates it.
func (c *Conn) tune(size int) {
	if size < 12 {
		return
	}
	b, err := c.r.Peek(7 + 12)
	if err != nil || binary.BigEndian.Uint16(b[7:]) != 10 || binary.BigEndian.Uint16(b[9:]) != 30 {
		return
	}
	server := int(binary.BigEndian.Uint32(b[13:]))
	n := max(c.client, server)
	if c.client != 0 && server != 0 {
		n = min(c.client, server)
	}
	if n > 0 && n < minFrame {
		n = minFrame
	}
	c.frameMax = n
}

// header passes a content header frame of size payload bytes, or its
// rewrite when the client would refuse it.
func (c *Conn) header(size int) error {
	if c.frameMax > 0 && size > c.frameMax-8 {
		return c.oversize(size)
	}
	total := 7 + size + 1
	var frame []byte
	var err error
	buffered := total <= c.r.Size()
	if buffered {
		frame, err = c.r.Peek(total)
	} else {
		c.scratch = grow(c.scratch, total)
		frame = c.scratch[:total]
		var n int
		n, err = io.ReadFull(c.r, frame)
		frame = frame[:n]
	}
	if err != nil {
		// A partial frame: the client reads what came, then the error.
		c.raw = true
		if !buffered {
			c.out = frame
		}
		return nil
	}
	payload := frame[7 : 7+size]
	r := Result{}
	if frame[total-1] == frameEnd && size >= headerLen {
		r = Check(payload)
	}
	if r.OK() {
		if buffered {
			c.left = total
		} else {
			c.out = frame
		}
		return nil
	}
	limit := size
	if c.frameMax > 0 {
		limit = c.frameMax - 8
	}
	c.out = c.frame(frame[:7], payload, r, limit)
	if buffered {
		_, _ = c.r.Discard(total)
	}
	return nil
}

// oversize replaces a content header of size payload bytes, over the
// negotiated frame size, by a marked one: the client refuses the frame
// before reading it.
func (c *Conn) oversize(size int) error {
	keep := min(size, headerLen+MaxRaw)
	head := make([]byte, 7+keep)
	if _, err := io.ReadFull(c.r, head); err != nil {
		c.out, c.raw = head, true
		return nil
	}
	if _, err := c.r.Discard(size - keep + 1); err != nil { // the rest and the frame end
		return err
	}
	payload := head[7:]
	r := Result{Why: fmt.Sprintf("the content header is %d bytes, over the %d-byte frame size the connection negotiated", size, c.frameMax),
		raw: [2]int{min(headerLen, keep), keep}}
	if keep < headerLen {
		c.out, c.raw = head, true
		return nil
	}
	c.out = c.frame(head[:7], payload, r, c.frameMax-8)
	return nil
}

// frame builds the rewritten frame of payload (refused: r) with the
// channel of header h, and reports it.
func (c *Conn) frame(h, payload []byte, r Result, limit int) []byte {
	out := append(make([]byte, 0, 7+limit+1), frameHeader, h[1], h[2], 0, 0, 0, 0)
	out = Rewrite(out, payload, r, limit)
	binary.BigEndian.PutUint32(out[3:], uint32(len(out)-7))
	out = append(out, frameEnd)
	if c.refused != nil {
		c.refused(r.Why)
	}
	return out
}

func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}
