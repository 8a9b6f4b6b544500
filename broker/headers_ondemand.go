package broker

import "iter"

// HeaderReader reads the headers of a delivery where its backend holds
// them (a Kafka record's header list, an AMQP header table), for a
// subscription with HeadersOnDemand. Backends implement it; handlers use
// Delivery.Header and Delivery.AllHeaders.
type HeaderReader interface {
	// Header returns the value of the application header key and whether
	// the message has it.
	Header(key string) (string, bool)
	// Range calls f with each application header, each name once, until
	// f returns false.
	Range(f func(key, value string) bool)
}

// SetHeaderReader makes r the source of d's headers while d.Headers is
// nil. Backends call it for HeadersOnDemand subscriptions.
func (d *Delivery) SetHeaderReader(r HeaderReader) { d.reader = r }

// Header returns the value of header key as delivered ("" when absent):
// from Headers when it is set, else from the backend (HeadersOnDemand).
func (d *Delivery) Header(key string) string {
	v, _ := d.LookupHeader(key)
	return v
}

// LookupHeader is Header that also reports whether the message has the
// header (a header may be set to "").
func (d *Delivery) LookupHeader(key string) (string, bool) {
	if d.Headers != nil || d.reader == nil {
		v, ok := d.Headers[key]
		return v, ok
	}
	return d.reader.Header(key)
}

// AllHeaders yields every header as delivered, each name once: Headers
// when it is set, else the backend's (HeadersOnDemand).
func (d *Delivery) AllHeaders() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if d.Headers != nil || d.reader == nil {
			for k, v := range d.Headers {
				if !yield(k, v) {
					return
				}
			}
			return
		}
		d.reader.Range(yield)
	}
}
