package driver

import (
	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/internal/deliveryset"
	"github.com/redrive/redrive/broker/internal/msgid"
)

// Header names only backends write and read: a message's id, topic and
// key where the broker has no field for them, and the due time of a
// retry that waits in a topic. The story's names (attempt, failure
// times, error, worker, reason, replayed-from) are package broker's.
const (
	HeaderMessageID = "x-redrive-message-id" // message id (Kafka; AMQP uses the property)
	HeaderTopic     = "x-redrive-topic"      // topic the message was published to
	HeaderKey       = "x-redrive-key"        // message key where the broker has none (RabbitMQ)
	HeaderDueAt     = "x-redrive-due-at"     // a retry waiting in a topic (Kafka non-blocking): RFC 3339 due time
)

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
func SetHeaderReader(d *broker.Delivery, r HeaderReader) { deliveryset.SetHeaderReader(d, r) }

// SetDerivedID makes derive how d's StableID is found when d.ID is empty
// (a message written without an id): a backend that can derive a stable
// id (Kafka: from where the record was first written) sets it on its
// deliveries, and derive runs only when someone asks. derive should be a
// function of the package, not a closure, so that setting it allocates
// nothing.
func SetDerivedID(d *broker.Delivery, derive func(*broker.Delivery) string) {
	deliveryset.SetDerivedID(d, derive)
}

// AppendMessageID appends a new message id (as broker.NewMessageID
// returns) to dst and returns the extended slice: for a backend that
// needs the id as bytes, such as a Kafka record header, without a string
// in between.
func AppendMessageID(dst []byte) []byte { return msgid.Append(dst) }
