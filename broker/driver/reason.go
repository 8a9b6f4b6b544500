package driver

import "github.com/redrive/redrive/retrypolicy"

// Reason is why a message was dead-lettered (the broker.HeaderReason
// value, a dead letter's Entry.Reason). It is retrypolicy's type: the
// policy's verdicts are reasons of this set by construction.
type Reason = retrypolicy.Reason

// Dead-letter reasons (broker.HeaderReason values).
const (
	// ReasonMaxRetries: the policy's retries (or its elapsed budget) are
	// exhausted.
	ReasonMaxRetries = retrypolicy.ReasonMaxRetries
	// ReasonPermanent: the handler returned broker.Permanent, or an error
	// of a non-retriable class.
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

// Error classes the pipeline assigns itself (broker.ClassPanic aside).
const (
	// ClassExpired: the message was older than the subscription's MaxAge.
	ClassExpired = "expired"
	// ClassMaxClaims: the message was claimed more than max_claims times
	// without its handler finishing.
	ClassMaxClaims = "max_claims"
	// ClassUndecodable: the broker client could not decode the message's
	// properties.
	ClassUndecodable = "undecodable"
)
