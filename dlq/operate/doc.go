// Package operate is what an operator does with stored dead letters, on
// any [dlq.Store] and any backend's [dlq.Republisher]: an [Ops] lists and
// shows entries and their payloads, replays one to its configured route
// (or refuses it: an unknown message, an origin that disagrees with the
// DLQ's route), discards one with a reason, replays or discards all that
// a query selects at a bounded rate ([Ops.ReplayAll], [Ops.DiscardAll]),
// reconciles replays a crash interrupted, applies each DLQ's retention,
// and exports redrive_dlq_pending and worker_dlq_replayed_total. Every
// change is an audited status transition of the store. The admin API
// (dlq/admin), the console (dlq/console), the CLI and the background jobs
// (dlq/jobs) are built on it.
package operate
