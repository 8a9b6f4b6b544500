// Package dlq is the vocabulary of dead letters once a backend has
// dead-lettered them, shared by every part that handles them: the [Entry]
// view of a dead-lettered message on any backend and the interfaces a
// backend implements to be kept and replayed ([Source] reads its DLQs,
// [Republisher] replays, [Router] names its DLQs and replay routes); the
// stored [Record] with its [Status] and audit rows ([AuditEntry]); the
// [Store] interface (implemented by dlq/pgstore and dlq/memstore; the
// conformance suite is dlq/storetest) and the optional
// [BatchTransitioner] and [PeriodArchiver]; the listing [Query], [Filter]
// and failure groups ([Group], [Fingerprint]); a replay-all job as a
// [JobStore] keeps it ([Job], [JobState]); a DLQ's [Policy]; the
// application's [Hook] on a new dead letter.
//
// What acts on dead letters is in sub-packages, each named for what it
// provides: dlq/keeper stores every dead letter once before acknowledging
// it; dlq/operate lists, replays and discards with an audit log, runs
// replay-all and discard-all, reconciles interrupted replays and applies
// retention; dlq/jobs runs replay-all and discard-all in the background,
// shared by the replicas through a JobStore. The admin HTTP API
// (dlq/admin) and the console (dlq/console) are built on them. How a
// backend writes its dead letters (the Kafka JSON envelope) is the
// backend's own. docs/architecture.md draws where each step happens.
package dlq
