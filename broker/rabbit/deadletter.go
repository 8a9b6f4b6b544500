package rabbit

import (
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// EntryFromDelivery reads a message taken from a "<queue>.dlq" queue into
// the dead-letter view: the original body byte for byte, the application
// headers with their AMQP types and the properties (Entry.OriginalWire;
// OriginalHeaders is their string view), the x-redrive-* story when redrive
// dead-lettered it, or the x-death story when the broker did (queue TTL
// expired, rejected, max length; storyFromDeath). The headers the broker
// wrote (x-death with its types, ...) are kept after the application's in
// the wire form (deadLetterForm), never replayed. A delivery whose
// properties amqp091-go could not decode (HeaderUndecodable) is an entry
// with reason undecodable that keeps the refused bytes (markUndecodable).
func EntryFromDelivery(m amqp.Delivery) driver.Entry {
	h := fromTable(m.Headers)
	e := driver.Entry{
		MessageID:         m.MessageId,
		OriginalTopic:     h[driver.HeaderTopic],
		OriginalPartition: -1,
		OriginalOffset:    -1,
		OriginalValue:     m.Body,
		OriginalHeaders:   driver.AppHeaders(h),
		ErrorClass:        h[broker.HeaderErrorClass],
		ErrorMessage:      h[broker.HeaderError],
		Reason:            h[broker.HeaderReason],
		Worker:            h[broker.HeaderWorker],
		WorkerInstance:    h[broker.HeaderWorkerInstance],
		Source:            h[broker.HeaderSource],
		FirstFailureAt:    wire.ParseTime(h[broker.HeaderFirstFailureAt]),
		LastFailureAt:     wire.ParseTime(h[broker.HeaderLastFailureAt]),
	}
	if k, ok := h[driver.HeaderKey]; ok {
		e.OriginalKey = []byte(k)
	}
	if w, err := wire.Encode(deadLetterForm(m)); err == nil { // values amqp091-go read always encode
		e.OriginalWire = w
	}
	if n, err := strconv.Atoi(h[broker.HeaderAttempt]); err == nil && n > 0 {
		e.RetryCount = n - 1
	}
	if why, ok := undecodable(m.Headers); ok {
		markUndecodable(&e, m, why)
		return e
	}
	if e.Reason == "" {
		// Dead-lettered by the broker: x-death tells the story.
		storyFromDeath(&e, parseDeath(m.Headers))
	}
	return e
}
