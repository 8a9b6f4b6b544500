// Package keeper stores every dead letter once before the backend
// acknowledges it: a [Keeper] reads the configured dead-letter queues
// through a backend's [dlq.Source] (a batch at a time when it is a
// [dlq.BatchSource]), inserts each entry into a [dlq.Store] (unparseable
// ones stored raw, never dropped), counts it (worker_dlq_messages_total,
// worker_dlq_processing_seconds), calls the application's [dlq.Hook], and
// only then acknowledges it. `redrive serve` runs one; an application
// may run its own (New, Config).
package keeper
