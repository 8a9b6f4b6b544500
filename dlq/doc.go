// Package dlq owns dead letters once a backend has dead-lettered them: the
// [Entry] view of a dead-lettered message on either broker; the interfaces
// a backend implements to be kept and replayed ([Source] reads its DLQs,
// [Republisher] replays, [Router] names its DLQs and replay routes); the
// [Keeper], which stores every dead letter once ([Store], implemented by
// dlq/pgstore and dlq/memstore) before acknowledging it; and [Ops]:
// listing, replay and discard with an audit log, replay-all ([Jobs] runs it
// in the background), reconciliation of interrupted replays and retention.
// The admin HTTP API (dlq/admin) and the console (dlq/console) are built on
// Ops. How a backend writes its dead letters (the Kafka JSON envelope) is
// the backend's own. docs/architecture.md draws where each step happens.
package dlq
