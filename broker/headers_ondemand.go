package broker

import (
	"iter"

	"github.com/redrive/redrive/broker/internal/deliveryset"
)

func init() {
	deliveryset.SetHeaderReader = func(d any, r deliveryset.HeaderReader) { d.(*Delivery).reader = r }
	deliveryset.SetDerivedID = func(d, f any) { d.(*Delivery).derivedID, _ = f.(func(*Delivery) string) }
}

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
