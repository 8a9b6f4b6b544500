// Package jobs runs replay-all and discard-all in the background: a
// [Jobs] starts one per DLQ at a time on an operate.Ops, checkpoints its
// progress in a [dlq.JobStore] (in memory, [dlq.NewMemJobStore], or
// PostgreSQL's, shared by the replicas), renews its lease, takes over the
// job of a replica whose lease expired, and cancels on request. The
// admin API and the console share one Jobs.
package jobs
