package driver

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// Route is where replays of one configured worker's dead letters go. Routes
// come from the operator's configuration (each backend builds them from
// the workers: rabbit.Route, kafka.Route), never from a message: anyone
// who can write to a DLQ can write any header, so an entry's recorded
// origin only ever confirms its route, or marks the entry as an origin
// mismatch that is refused on replay.
type Route struct {
	// DLQ is the worker's dead-letter queue: RabbitMQ
	// "<topic>.<worker>.dlq" (one per worker), Kafka "<topic>.dlq" (shared
	// by the topic's workers).
	DLQ string
	// Topic and Worker are the configured worker's topic and name.
	Topic, Worker string
	// Target is the queue (RabbitMQ "<topic>.<worker>") or topic (Kafka,
	// the worker's retry topic "<topic>.retry.<worker>") a replay is
	// published to.
	Target string
	// Sources are the queues or topics the worker consumes: an entry that
	// records another one as where it failed (Entry.Source) is a mismatch.
	Sources []string
	// Foreign marks the route of another application's dead-letter queue
	// or topic (ForeignRoute): every entry of DLQ replays to Target,
	// whatever origin it records (that application's, not redrive's
	// workers').
	Foreign bool
	// EveryGroup marks a Kafka route whose Target is the topic itself,
	// which every consumer group of the topic receives, not only Worker:
	// the route of a worker declared foreign (written in another language,
	// it consumes the topic itself and never reads redrive's retry topic;
	// see Router.ForeignWorkerRoute) and of a foreign DLQ topic
	// (ForeignRoute).
	EveryGroup bool
	// Exchange is, on RabbitMQ, the exchange a replay is published to,
	// with Target as its routing key: a foreign DLQ's configured target,
	// or the one Resolve found. Empty: the retry exchange, with the
	// queue Target as routing key.
	Exchange string
	// Exchanges are the exchanges Resolve may pick (the operator's
	// allow-list), named by Destination while the route is unresolved.
	Exchanges []string
	// Resolve, when set, gives the route of one entry from its whole
	// stored form: a foreign RabbitMQ DLQ whose replays go where each
	// message's x-death says it was published, to an exchange of
	// Exchanges only (rabbit.ForeignRoute). Target calls it on records
	// read whole; a brief record (a listing) gets the route unresolved.
	// Its error wraps ErrOriginMismatch.
	Resolve func(Entry) (Route, error)
}

// Resolved reports whether rt names where a replay goes: it has no
// Resolve, or it is what Resolve returned.
func (rt Route) Resolved() bool { return rt.Resolve == nil }

// ErrOriginMismatch is wrapped when an entry's recorded origin (worker,
// topic, source) disagrees with the route its DLQ's configuration gives,
// or when its DLQ is shared and the entry names no configured worker. Such
// an entry is kept and shown, and refused on replay (HTTP 409); replay-all
// skips and counts it.
var ErrOriginMismatch = errors.New("origin mismatch")

// Republisher puts a dead letter back where its route says (to.Target, the
// configured worker's queue or retry topic; never a place the entry names),
// with its original key, payload, headers and properties, and the
// x-redrive-replayed-from header set to replayedFrom ("<dlq>/<id>"). It
// returns once the broker confirmed. A backend's Broker implements it;
// operate.Ops replays through it.
type Republisher interface {
	Republish(ctx context.Context, e Entry, to Route, replayedFrom string) error
}

// Router names a backend's dead-letter queues: the replay route of a
// configured worker, whose DLQ is where the worker's dead letters go
// (RabbitMQ "<topic>.<worker>.dlq", one per worker; Kafka "<topic>.dlq",
// shared by the topic's workers) and whose Target is where they are
// replayed to. Each backend provides one (Descriptor.Router), so that no caller
// spells a backend's names; it needs no connection.
type Router interface {
	// Route returns the replay route of worker of topic.
	Route(topic, worker string) Route
	// ForeignWorkerRoute returns the replay route of worker of topic
	// declared foreign (workers[].foreign: written in another language,
	// not run by redrive): the same DLQ as Route's, replaying where such
	// a worker reads (Kafka: topic itself, which every group of it
	// receives, Route.EveryGroup; RabbitMQ: its queue, as Route, which it
	// consumes).
	ForeignWorkerRoute(topic, worker string) Route
}

// Destination names where a replay on rt goes, for people, the one way
// the console, the CLI, the admin API and the audit log show it, in the
// words of backend (WordsOf): the queue or topic the replay is published
// to, and the worker that handles it there, saying when every group of a
// topic receives it:
//
//	queue escrow.commands.payout-executor (worker payout-executor)
//	topic escrow.commands.retry.payout-executor (worker payout-executor)
//
//	topic escrow.commands (every consumer group of it, worker payout-executor among them)
//	topic orders-replay (every consumer group of it)
//	exchange attune.executions, routing key execution.requested (every queue it routes to)
//	the exchange x-death names (one of attune.executions, attune.jobs), with its routing key
//
// The last is an x-death route not yet resolved for an entry (a
// listing); "" when rt has no target.
func (rt Route) Destination(backend string) string {
	switch {
	case rt.Resolve != nil:
		return "the exchange x-death names (one of " + strings.Join(rt.Exchanges, ", ") + "), with its routing key"
	case rt.Exchange != "":
		return "exchange " + rt.Exchange + ", routing key " + strconv.Quote(rt.Target) + " (every queue it routes to)"
	case rt.Target == "":
		return ""
	}
	w := WordsOf(backend)
	unit, every := w.Unit, w.EveryGroup
	switch {
	case rt.EveryGroup && rt.Worker != "":
		return "topic " + rt.Target + " (" + every + ", worker " + rt.Worker + " among them)"
	case rt.EveryGroup || rt.Worker == "":
		return "topic " + rt.Target + " (" + every + ")"
	}
	return unit + " " + rt.Target + " (worker " + rt.Worker + ")"
}
