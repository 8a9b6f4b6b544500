package broker

import "github.com/redrive/redrive/retrypolicy"

// Header names that carry a message's story. They are the same on both
// brokers (Kafka record headers, AMQP header table entries).
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
	HeaderMessageID      = "x-redrive-message-id"       // message id (Kafka; AMQP uses the property)
	HeaderTopic          = "x-redrive-topic"            // topic the message was published to
	HeaderKey            = "x-redrive-key"              // message key on RabbitMQ
	HeaderDueAt          = "x-redrive-due-at"           // Kafka non-blocking retry: RFC 3339 due time
	HeaderRemainingDelay = "x-remaining-delay"          // RabbitMQ delay hops: ms left, integer
	HeaderPrefix         = "x-redrive-"
)

// Reason is why a message was dead-lettered (the HeaderReason value). It
// is retrypolicy's type: the policy's verdicts are reasons of this set by
// construction.
type Reason = retrypolicy.Reason

// Dead-letter reasons (HeaderReason values).
const (
	// ReasonMaxRetries: the policy's retries (or its elapsed budget) are
	// exhausted.
	ReasonMaxRetries = retrypolicy.ReasonMaxRetries
	// ReasonPermanent: the handler returned Permanent, or an error of a
	// non-retriable class.
	ReasonPermanent = retrypolicy.ReasonNonRetriable
	// ReasonExpired: older than the subscription's MaxAge.
	ReasonExpired Reason = "expired"
	// ReasonRejected: rejected by the broker (RabbitMQ).
	ReasonRejected Reason = "rejected"
	// ReasonMaxLength: dropped by a full queue (RabbitMQ).
	ReasonMaxLength Reason = "max_length"
	// ReasonMaxClaims: claimed more than MaxClaims times.
	ReasonMaxClaims Reason = "max_claims"
	// ReasonUndecodable: the broker client could not decode the message's
	// properties (RabbitMQ: a header table nested too deep or too long for
	// amqp091-go); its handler was not called.
	ReasonUndecodable Reason = "undecodable"
	// ReasonDeliveryLimit: dead-lettered by a RabbitMQ quorum queue
	// after its x-delivery-limit of deliveries came back unacknowledged
	// (x-death reason delivery_limit).
	ReasonDeliveryLimit Reason = "delivery_limit"
)

// Error classes redrive assigns itself.
const (
	ClassPanic   = "panic"
	ClassExpired = "expired"
	// ClassMaxClaims: the message was claimed more than max_claims times
	// without its handler finishing.
	ClassMaxClaims = "max_claims"
	// ClassUndecodable: the broker client could not decode the message's
	// properties.
	ClassUndecodable = "undecodable"
)
