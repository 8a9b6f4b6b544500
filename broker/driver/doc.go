// Package driver is what a redrive broker backend implements and calls:
// the seam between redrive and RabbitMQ, Kafka, or a backend of an
// application's own. An application never imports it; it uses package
// broker, and opens a backend by importing its package.
//
// # What a backend is
//
// A backend is one package (broker/rabbit, broker/kafka) that:
//
//   - implements [broker.Broker] (publish with confirms, delayed publish,
//     declare, consume until the context ends, close);
//   - runs every delivery through a [Pipeline] ([NewPipeline], one per
//     Consume) and executes its [Decision]: acknowledge, write the retry
//     copy (after Decision.Outcome.Delay), write the dead-letter copy,
//     hand the message back with the same attempt, or leave it to the
//     broker; the copies' headers come from [Patch] (the exact headers,
//     with the story of [Story]) and a delivery's story from [ReadStory];
//     a message is acknowledged only once its next home confirmed it;
//   - reads its dead-letter queues for the keeper ([Source], better
//     [BatchSource]), each message as a [DeadLetter] whose [Entry] is the
//     original message byte for byte and its story, with its id scheme
//     (DeadLetter.ID) and identity;
//   - republishes a dead letter where its [Route] says ([Republisher]);
//   - registers one [Descriptor] from init ([Register]): its name (the
//     configuration's broker key and a stored dead letter's Broker), how
//     to open it from backend-neutral [Settings], its [Router] (DLQ names
//     and replay routes, without connecting), its [Words], and its
//     optional capabilities.
//
// # Capabilities
//
// What not every backend offers is a small interface, found in one place:
// on the opened broker.Broker, [Pauser] (the worker runtime's kill switch
// and operator pause stop the consumer), [Instancer]; through the
// descriptor, a [Monitor] ([GroupLagMonitor]: consumer-group offsets;
// [DepthMonitor]: queue depth) that package lag samples and exports, a
// [Topology] (`redrive topology plan|apply|delete`) and a [DevServer]
// (`redrive dev`). A missing one is reported with [ErrNoCapability].
//
// # Conformance
//
// A backend passes the end-to-end suite (package e2e, which runs the same
// scenarios against every backend: retries on the worker's schedule,
// dead letters with their story, replay byte for byte, nothing lost,
// nothing twice), and the keeper stores its dead letters in any store
// that passes dlq/storetest. docs/backends.md says how to write one.
package driver
