// Package deliveryset lets broker/driver set what a [broker.Delivery]
// keeps unexported (its header reader, how its backend derives its id),
// so that package broker exports
// only what an application uses. Package broker installs the setter from
// init; nothing else imports this package but broker/driver.
//
// [broker.Delivery]: https://pkg.go.dev/github.com/redrive/redrive/broker#Delivery
package deliveryset

// HeaderReader reads a delivery's headers where its backend holds them
// (driver.HeaderReader has the same methods).
type HeaderReader interface {
	Header(key string) (string, bool)
	Range(f func(key, value string) bool)
}

// SetHeaderReader makes r the source of d's headers while d.Headers is
// nil; d is a *broker.Delivery. Set by package broker's init.
var SetHeaderReader func(d any, r HeaderReader)

// SetDerivedID makes f (a func(*broker.Delivery) string) how d (a
// *broker.Delivery) derives its StableID when it has no ID. Set by
// package broker's init.
var SetDerivedID func(d, f any)
