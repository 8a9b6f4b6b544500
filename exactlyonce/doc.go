// Package exactlyonce applies a message's effects once, and publishes what
// a handler sends only if its transaction committed, on PostgreSQL
// (github.com/jackc/pgx/v5), over either broker: an inbox and a
// transactional outbox, as NServiceBus's Outbox and MassTransit's
// transactional outbox with its inbox do.
//
// redrive delivers at least once: a worker killed between its commit and
// its acknowledgement, a lost connection or a rebalance hands a message
// again to a handler that already applied it. The inbox keeps, in the
// handler's own transaction, a row (worker, message id); a delivery whose
// row exists is acknowledged without calling the handler. The outbox keeps
// the messages a handler publishes in the same transaction; a [Relay]
// publishes the committed ones through broker.Broker.Publish, with
// confirms, in commit order per topic and key, each with the message id
// fixed when it was written, so that a relay that publishes a message
// twice (a crash between the broker's confirm and the row's removal) is
// deduplicated by the receiver's inbox.
//
// # The pieces
//
//   - [New] and [Store.Migrate]: the tables, in the application's database
//     (the one the handlers change) or in a schema the operator names,
//     migrated under an advisory lock like the dead-letter store's.
//   - [Store.Inbox] and [Inbox.Handler]: a broker.Handler that opens a
//     transaction, records the message, runs the application's [Handler]
//     with it and commits before the broker acknowledges. [Inbox.Hook] is
//     the dead-letter keeper's hook (dlq.Hook) the same way, once per dead
//     letter.
//   - [Store.Publish]: messages written in the caller's transaction.
//   - [Store.NewRelay] and [Relay.Run]: the relay, woken by LISTEN/NOTIFY
//     within milliseconds of a commit, polling as a fallback; several
//     relays share the outbox by shards (session advisory locks).
//   - [Store.Run]: the inbox's partitions by day and their retention.
//
// What is and is not guaranteed, the tables, the sizing and how `redrive
// serve` runs the relay are in docs/exactly-once.md.
package exactlyonce
