package broker

// Header names that carry a message's story (DESIGN.md's list). They are
// the same on every backend (Kafka record headers, AMQP header table
// entries); a handler reads them through the Delivery's fields, and the
// dead letters and replays of other consumers carry them. The names only
// backends need (message id, topic, key, due time) are broker/driver's.
const (
	HeaderAttempt        = "x-redrive-attempt"          // 1-based attempt of the next delivery
	HeaderFirstFailureAt = "x-redrive-first-failure-at" // RFC 3339, UTC
	HeaderLastFailureAt  = "x-redrive-last-failure-at"  // RFC 3339, UTC
	HeaderError          = "x-redrive-error"            // last error message
	HeaderErrorClass     = "x-redrive-error-class"      // last error class
	HeaderWorker         = "x-redrive-worker"           // group that failed
	HeaderWorkerInstance = "x-redrive-worker-instance"  // worker process that failed
	HeaderSource         = "x-redrive-source"           // original topic or queue
	HeaderReason         = "x-redrive-reason"           // why it was dead-lettered
	HeaderReplayedFrom   = "x-redrive-replayed-from"    // DLQ entry a replay came from
	HeaderRemainingDelay = "x-remaining-delay"          // RabbitMQ delay hops: ms left, integer
	HeaderPrefix         = "x-redrive-"
)

// ClassPanic is the error class of a handler panic (see PanicError).
const ClassPanic = "panic"
