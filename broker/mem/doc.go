// Package mem is redrive's in-memory broker: a backend that keeps topics,
// workers' queues and dead-letter queues in the process, for the tests of
// an application's handlers (like watermill's GoChannel and river's
// rivertest) and for `redrive dev --broker memory`.
//
// It runs the same contract as RabbitMQ and Kafka, through the same
// seam (broker/driver): the same Delivery, the same errors (Permanent,
// RetryAfter, Requeue), retries on the worker's own schedule with the
// header story, max attempts, max age, dead letters with their story in
// a DLQ per worker that the keeper reads and replays put back. It passes
// the end-to-end suite (package e2e) unchanged.
//
// What it adds for tests:
//
//   - a Clock a test advances (ServerConfig.Clock): delays, back-offs,
//     max age and the policy's elapsed budget count on it, so that a test
//     of a back-off of hours neither sleeps nor waits;
//   - Server.Idle, which waits until every due message was handled, and
//     Server.Drain, which advances the clock through every retry until
//     nothing is left;
//   - Server.DeadLetters and Server.Stats, to assert what was
//     dead-lettered and what waits;
//   - Server.Inject, a message as another producer would write it (no id,
//     no header, nil key or value).
//
// A program links it with one import line, and a configuration names it
// (`broker: memory`): every broker the program opens then joins the
// process's Server (Default). docs/testing.md shows how to test handlers
// on it.
package mem
