// Package broker defines the contract every redrive backend implements: the
// [Broker] interface, the [Message] an application publishes, the [Delivery]
// a [Handler] receives, the [Subscription] that binds a worker to a topic, the
// error classification a handler returns ([Permanent], [RetryAfter]), the
// header names that carry a message's story on the wire, and the
// dead-letter vocabulary every other package shares: [Reason], [Severity],
// [DLQOptions] and the backends' names ([Backend]). What happens to one
// delivery (max age, claims, the handler call, retry or dead letter) is
// decided for both backends by the internal failure pipeline
// (internal/pipeline); this package is only what an application uses.
//
// # Delivery semantics
//
// The semantics are the same on RabbitMQ and on Kafka:
//
//   - Every group (worker name) subscribed to a topic gets every message
//     published to it; the members of one group compete for messages.
//   - Delivery is at least once. A message may be handled more than once after
//     a crash, a reconnect or a rebalance; [Delivery.Message.ID] lets a handler
//     de-duplicate.
//   - A message is acknowledged (RabbitMQ) or its offset committed (Kafka) only
//     after its next home confirmed it: the handler returned nil, or the retry
//     copy or the dead-letter copy was confirmed by the broker. Nothing is
//     dropped between two homes.
//   - A failed message is retried on the worker's [retrypolicy.Policy]. A retry
//     goes back only to the group that failed, never to every group of the
//     topic.
//   - A handler's error decides what happens next: nil = done;
//     [Permanent](err) = straight to the dead-letter queue; [RetryAfter](err, d)
//     = retry after d (while retries remain); any other error = retry by the
//     policy, dead-letter queue when retries are exhausted. A handler panic is
//     recovered and treated as a failure of class "panic".
package broker
