package rabbit

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit/internal/framefilter"
	"github.com/redrive/redrive/broker/wire"
)

// Headers of a delivery whose properties amqp091-go cannot decode (a
// header table nested deeper than 32 levels, a table or array of more
// than 8,192 entries, a content header over the negotiated frame size):
// every connection a Dialer opens reads through a frame filter that
// replaces such a delivery's headers by these, so that the library does
// not close the connection (and the broker hand the same message to the
// next one, forever). A consumer dead-letters a delivery that has them
// with reason driver.ReasonUndecodable, without calling its handler; the
// keeper stores it with that reason and the refused bytes, and its replay
// is refused (its headers are not known).
const (
	// HeaderUndecodable says why the properties could not be decoded.
	HeaderUndecodable = framefilter.HeaderUndecodable
	// HeaderUndecodableRaw holds the refused bytes (at most 64 KiB): the
	// header table's, or the properties' from the refused one on.
	HeaderUndecodableRaw = framefilter.HeaderRaw
	// HeaderUndecodableSize is the size of the refused bytes, which
	// HeaderUndecodableRaw holds whole only up to 64 KiB.
	HeaderUndecodableSize = framefilter.HeaderRawSize
)

// undecodable returns why the frame filter marked a delivery with headers
// h, and whether it did. Anyone can publish the marker header: such a
// message is dead-lettered unhandled, as its producer asked.
func undecodable(h amqp.Table) (string, bool) {
	v, ok := h[HeaderUndecodable]
	if !ok {
		return "", false
	}
	why, _ := v.(string)
	if why == "" {
		why = "marked " + HeaderUndecodable
	}
	return why, true
}

// undecodableForm is the wire form an entry keeps of a marked delivery:
// its properties as read, and, instead of its headers (unknown), the
// refused bytes and their size.
func undecodableForm(m amqp.Delivery) wire.Form {
	f := formOf(m)
	f.Headers = wire.Table{}
	for _, k := range []string{HeaderUndecodableRaw, HeaderUndecodableSize} {
		if v, ok := m.Headers[k]; ok {
			f.Headers = append(f.Headers, wire.Field{Name: k, Value: wireValue(v)})
		}
	}
	return f
}

// markUndecodable makes e, read from marked delivery m, the entry of an
// undecodable message: reason undecodable (whatever else a header says:
// what the message said was refused), the error saying why unless a
// redrive consumer said it, the refused bytes as its wire form's headers
// and no string headers.
func markUndecodable(e *driver.Entry, m amqp.Delivery, why string) {
	e.Reason = string(driver.ReasonUndecodable)
	if e.ErrorMessage == "" {
		e.ErrorMessage = why
	}
	if e.ErrorClass == "" {
		e.ErrorClass = driver.ClassUndecodable
	}
	e.OriginalHeaders = map[string]string{}
	e.OriginalWire = nil
	if w, err := wire.Encode(undecodableForm(m)); err == nil {
		e.OriginalWire = w
	}
}
