// Package kafka is redrive's Kafka backend, built on franz-go.
//
// A [Broker] publishes with an idempotent producer (acks=all), creates the
// topics a [broker.Subscription] needs, and consumes each subscription with
// its own consumer group client. Offsets are committed by hand: a record's
// offset is committed only once the record is done (its handler returned
// nil, or its retry or dead-letter copy was acknowledged), so nothing is
// lost between two homes; duplicates are possible, as at-least-once allows.
//
// # Topics
//
//   - <topic>: what applications publish to; every group reads it.
//   - <topic>.dlq: dead letters of every group of the topic. The value is
//     the JSON envelope of EncodeEnvelope (DecodeEnvelope reads it back;
//     Spring Kafka's and Kafka Connect's dead letters are read too), the key the original key, the headers
//     the original headers plus redrive's x-redrive-* story.
//   - <topic>.retry.<group>: one per group, read by that group only: the
//     waiting room of its non_blocking retries and where replays of its dead
//     letters arrive, so that a retry or a replay returns only to the group
//     that failed.
//
// # Retry modes
//
// In blocking mode (the default) a failed record is retried in place after its
// back-off: only its partition waits, other partitions keep flowing, and the
// order of records within a partition is kept. In non_blocking mode a failed
// record is copied to the group's retry topic with an x-redrive-due-at header
// and its offset committed; the same consumer reads the retry topic and
// handles its records when due, earliest first (within Config.MaxBuffered
// records or Config.MaxBufferedBytes per partition). Order is not kept.
//
// # Buffering
//
// A partition's worker buffers at most Config.MaxBuffered records (4,096)
// or Config.MaxBufferedBytes (4 MiB), give or take one fetch. When a buffer
// is full the poll loop waits, up to 50 ms, for the worker to drain it to
// half, so that fetching never stops for a worker that keeps up; a worker
// slower than that (a slow handler, a back-off, a retry partition full of
// records not yet due) has fetching of its partition paused instead, so
// that it holds no other partition back.
//
// # Delays
//
// PublishDelayed writes the records to <topic> itself with an
// x-redrive-due-at header. Every group's consumer holds the partition until
// the head record is due (a delayed record delays the records behind it in
// its partition: head-of-line blocking). Delays are never early on a
// consumer whose clock agrees with the publisher's.
//
// # Dead letters
//
// The Broker is also the keeper's driver.Source (ConsumeDeadLetters) and the
// replays' driver.Republisher (Republish, to the failing group's retry topic).
package kafka
