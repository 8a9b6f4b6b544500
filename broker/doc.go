// Package broker is what an application uses to publish and to handle
// messages, whichever backend runs them: the [Broker] interface, the
// [Message] an application publishes, the [Delivery] a [Handler] receives,
// the [Subscription] that binds a worker to a topic with its DLQ options
// ([DLQOptions], [Severity]) and its poison-pill counter ([ClaimCounter]),
// the error classification a handler returns ([Permanent], [RetryAfter],
// [Requeue]) and the header names that carry a message's story on the
// wire.
//
// A backend (broker/rabbit, broker/kafka, or one of an application's own)
// implements [Broker] through package broker/driver, the seam that holds
// what only backends use: the per-delivery pipeline that decides what
// happens to one delivery (max age, claims, the handler call, retry or
// dead letter), the dead-letter view, the backend's descriptor and its
// capabilities. An application never imports it: it opens a backend by
// importing its package and naming it in the configuration (worker.Load),
// or by calling the backend's New.
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
