package driver

import "time"

// Entry is one dead letter, whichever broker it came from: the original
// message byte for byte, and the story of why it was given up on.
type Entry struct {
	// MessageID is the message's id (AMQP message-id, Kafka
	// x-redrive-message-id header); may be empty for foreign messages.
	MessageID string
	// OriginalTopic is the topic the message was published to.
	OriginalTopic string
	// OriginalPartition and OriginalOffset locate the failed Kafka record;
	// -1 on RabbitMQ.
	OriginalPartition int32
	OriginalOffset    int64
	// OriginalKey, OriginalValue and OriginalHeaders are what the
	// application published, byte for byte (redrive's own x-redrive-*
	// headers are not part of them).
	OriginalKey     []byte
	OriginalValue   []byte
	OriginalHeaders map[string]string
	// OriginalWire is the exact wire form of the original message's
	// application headers (types, order, repeated and binary names) and,
	// on RabbitMQ, its properties: wire.Encode's versioned bytes, opaque to
	// stores, decoded by the backend that replays it and by the admin API.
	// OriginalHeaders is its string view. On RabbitMQ it also keeps, after
	// the application's headers, those the broker wrote when it
	// dead-lettered the message (x-death with its types,
	// x-first-death-*, ...): the broker's story, shown, never replayed,
	// and left out of OriginalHeaders. Nil for entries stored before
	// redrive kept it and for foreign or unparseable messages whose form is
	// unknown: a replay then sends OriginalHeaders as strings.
	OriginalWire []byte
	// ErrorClass, ErrorMessage and StackTrace (at most 500 characters)
	// describe the last failure.
	ErrorClass   string
	ErrorMessage string
	StackTrace   string
	// Reason is why it was dead-lettered: max_retries, permanent, expired,
	// rejected, max_length, max_claims, delivery_limit, unparseable,
	// undecodable.
	Reason string
	// RetryCount is how many retries were made before giving up.
	RetryCount int
	// Worker is the group (worker name) that gave up; WorkerInstance the
	// process instance, when known.
	Worker         string
	WorkerInstance string
	// Source is the queue (RabbitMQ) or topic (Kafka) the message was
	// consumed from when it failed.
	Source string
	// FirstFailureAt and LastFailureAt are the failure times (zero when the
	// broker dead-lettered the message without a handler failure).
	FirstFailureAt time.Time
	LastFailureAt  time.Time
	// GroupType is the kind of group the message was consumed as when it
	// was dead-lettered, in Kafka's words: "share" for a share group
	// (KIP-932; a worker of retry mode share); empty for a consumer group
	// and on RabbitMQ.
	GroupType string
	// DeliveryCount is the broker's count of deliveries of the record to
	// its share group when it was dead-lettered (1 = the first); 0 when
	// unknown or not a share group's.
	DeliveryCount int
}
