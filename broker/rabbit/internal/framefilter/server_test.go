package framefilter

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// This file is a minimal AMQP 0-9-1 server for the tests: it answers
// amqp091-go's handshake and, when the client consumes, sends content
// header frames of the test's making, which no real broker would let a
// test choose. What amqp091-go then does with them is the reference
// Check is compared against.

// clientFrameSize is the frame size the test clients propose.
const clientFrameSize = 131072

// delivery is one message the server delivers: its content header payload
// (class id, weight, body size, flags, properties) and its body.
type delivery struct {
	header []byte
	body   []byte
}

// server serves one connection on conn with frame-max frameMax, then
// delivers ds once the client consumes. It returns when the client
// closes the connection or conn fails.
func server(conn net.Conn, frameMax uint32, ds func(w *bufio.Writer)) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	proto := make([]byte, 8)
	if _, err := io.ReadFull(r, proto); err != nil {
		return
	}
	start := binary.BigEndian.AppendUint16(nil, 10)
	start = binary.BigEndian.AppendUint16(start, 10)
	start = append(start, 0, 9)       // version
	start = append(start, 0, 0, 0, 0) // server properties: an empty table
	start = appendLongstr(start, "PLAIN")
	start = appendLongstr(start, "en_US")
	writeFrame(w, frameMethod, 0, start)
	_ = w.Flush()
	for {
		typ, ch, payload, err := readFrame(r)
		if err != nil || typ != frameMethod || len(payload) < 4 {
			if err != nil {
				return
			}
			continue
		}
		class, method := binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:])
		switch [2]uint16{class, method} {
		case [2]uint16{10, 11}: // start-ok → tune
			tune := binary.BigEndian.AppendUint16(nil, 10)
			tune = binary.BigEndian.AppendUint16(tune, 30)
			tune = binary.BigEndian.AppendUint16(tune, 0)
			tune = binary.BigEndian.AppendUint32(tune, frameMax)
			tune = binary.BigEndian.AppendUint16(tune, 0)
			writeFrame(w, frameMethod, 0, tune)
		case [2]uint16{10, 40}: // open → open-ok
			writeFrame(w, frameMethod, 0, []byte{0, 10, 0, 41, 0})
		case [2]uint16{20, 10}: // channel.open → open-ok
			writeFrame(w, frameMethod, ch, []byte{0, 20, 0, 11, 0, 0, 0, 0})
		case [2]uint16{20, 40}: // channel.close → close-ok
			writeFrame(w, frameMethod, ch, []byte{0, 20, 0, 41})
		case [2]uint16{10, 50}: // connection.close → close-ok
			writeFrame(w, frameMethod, 0, []byte{0, 10, 0, 51})
			_ = w.Flush()
			return
		case [2]uint16{60, 20}: // basic.consume → consume-ok, then the deliveries
			p := payload[4+2:]  // reserved short
			p = p[1+int(p[0]):] // queue
			tag := p[1 : 1+int(p[0])]
			writeFrame(w, frameMethod, ch, appendShortstr([]byte{0, 60, 0, 21}, string(tag)))
			_ = w.Flush()
			ds(w)
		}
		_ = w.Flush()
	}
}

// writeDelivery writes one basic.deliver with its content header and body.
func writeDelivery(w *bufio.Writer, ch uint16, tag uint64, d delivery) {
	m := appendShortstr([]byte{0, 60, 0, 60}, "ctag")
	m = binary.BigEndian.AppendUint64(m, tag)
	m = append(m, 0)
	m = appendShortstr(m, "ex")
	m = appendShortstr(m, "key")
	writeFrame(w, frameMethod, ch, m)
	writeFrame(w, frameHeader, ch, d.header)
	if len(d.body) > 0 {
		writeFrame(w, frameBody, ch, d.body)
	}
}

func writeFrame(w *bufio.Writer, typ byte, ch uint16, payload []byte) {
	var h [7]byte
	h[0] = typ
	binary.BigEndian.PutUint16(h[1:], ch)
	binary.BigEndian.PutUint32(h[3:], uint32(len(payload)))
	_, _ = w.Write(h[:])
	_, _ = w.Write(payload)
	_ = w.WriteByte(frameEnd)
}

func readFrame(r *bufio.Reader) (typ byte, ch uint16, payload []byte, err error) {
	var h [7]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	payload = make([]byte, binary.BigEndian.Uint32(h[3:])+1)
	if _, err = io.ReadFull(r, payload); err != nil {
		return
	}
	if payload[len(payload)-1] != frameEnd {
		return 0, 0, nil, errors.New("no frame end")
	}
	return h[0], binary.BigEndian.Uint16(h[1:]), payload[:len(payload)-1], nil
}

func appendLongstr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

// header returns a content header payload of class basic for a body of
// bodySize bytes with flags and the properties' encoded bytes.
func header(bodySize uint64, flags uint16, props []byte) []byte {
	b := []byte{0, 60, 0, 0}
	b = binary.BigEndian.AppendUint64(b, bodySize)
	b = binary.BigEndian.AppendUint16(b, flags)
	return append(b, props...)
}

// session is a client connected to a test server.
type session struct {
	conn       *amqp.Connection
	deliveries <-chan amqp.Delivery
	closed     chan *amqp.Error
}

// connect starts a server delivering what ds writes and connects a client
// to it, through Wrap when filtered; refused collects the filter's
// reasons.
func connect(t testing.TB, filtered bool, frameMax uint32, ds func(w *bufio.Writer), refused func(string)) *session {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			server(c, frameMax, ds)
		}
	}()
	nc, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var tr net.Conn = nc
	if filtered {
		tr = Wrap(nc, clientFrameSize, refused)
	}
	conn, err := amqp.Open(tr, amqp.Config{SASL: []amqp.Authentication{&amqp.PlainAuth{Username: "u", Password: "p"}},
		Vhost: "/", FrameSize: clientFrameSize, Locale: "en_US"})
	if err != nil {
		nc.Close()
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	s := &session{conn: conn, closed: conn.NotifyClose(make(chan *amqp.Error, 1))}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	if s.deliveries, err = ch.Consume("q", "ctag", true, false, false, false, nil); err != nil {
		t.Fatalf("consume: %v", err)
	}
	return s
}

// next returns the next delivery, or false when the connection closed
// first (the client refused a frame).
func (s *session) next(t testing.TB) (amqp.Delivery, bool) {
	t.Helper()
	select {
	case d, ok := <-s.deliveries:
		return d, ok
	case <-s.closed:
		return amqp.Delivery{}, false
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery and no close within 10 s")
		return amqp.Delivery{}, false
	}
}
