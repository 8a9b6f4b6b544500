package dlq

import "context"

// DeadLetter is one message read from a dead-letter queue by a Source.
type DeadLetter struct {
	// DLQ is the dead-letter queue (RabbitMQ) or topic (Kafka) it was read
	// from.
	DLQ string
	// ID is the broker's address of the message when it has one that an
	// operator can use ("{partition}-{offset}" on Kafka); empty on RabbitMQ,
	// where the store assigns ids.
	ID string
	// Identity identifies this dead-lettering of this message, so that a
	// redelivered dead letter is stored once: Kafka
	// "<partition>-<offset>@<record ms>" (the record time tells a recreated
	// DLQ topic's offsets from old ones); RabbitMQ a digest of the message
	// id, the failure time and the reason.
	Identity string
	// Entry is the dead letter's view. When the message could not be
	// decoded, Entry.Reason is ReasonUnparseable and Entry.OriginalValue
	// holds the raw bytes.
	Entry Entry
}

// ReasonUnparseable marks an entry whose message could not be decoded; it
// is stored raw, never dropped.
const ReasonUnparseable = "unparseable"

// Source delivers the messages of dead-letter queues. Each backend
// implements it.
type Source interface {
	// ConsumeDeadLetters calls handle for every message of the named DLQs
	// and acknowledges (or commits) a message only after handle returned nil
	// for it. When handle fails, the message is not acknowledged and is
	// offered again after a back-off; later messages wait (nothing is
	// skipped). It blocks until ctx ends.
	ConsumeDeadLetters(ctx context.Context, dlqs []string, handle func(context.Context, DeadLetter) error) error
}

// Router names a backend's dead-letter queues: the replay route of a
// configured worker, whose DLQ is where the worker's dead letters go
// (RabbitMQ "<topic>.<worker>.dlq", one per worker; Kafka "<topic>.dlq",
// shared by the topic's workers) and whose Target is where they are
// replayed to. Each backend implements it (rabbit.Router, kafka.Router),
// so that no caller spells a backend's names.
type Router interface {
	// Route returns the replay route of worker of topic.
	Route(topic, worker string) Route
}
