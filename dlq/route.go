package dlq

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redrive/redrive/broker"
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

// ForeignRoute is the route of another application's dead-letter topic
// dlqName (a Spring Kafka "orders.DLT", a Kafka Connect "dlq-jdbc-sink"):
// its entries replay to the topic target the operator configured, which
// every consumer of that topic reads (no worker), never to the topic a
// record's headers name. (A foreign RabbitMQ DLQ's route is
// rabbit.ForeignRoute's.)
func ForeignRoute(dlqName, target string) Route {
	return Route{DLQ: dlqName, Topic: target, Target: target, Foreign: true, EveryGroup: true}
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

// ErrNoRoute is wrapped when no configured worker has the entry's DLQ: a
// replay has nowhere to go (HTTP 409).
var ErrNoRoute = errors.New("no configured worker replays this DLQ")

// Target returns the route a replay of r takes: the configured worker of
// r's DLQ, the one r names when the DLQ is shared. It is an error wrapping
// ErrNoRoute when no worker is configured for the DLQ, or ErrOriginMismatch
// (with a message naming where the entry claims to come from and where its
// DLQ replays to) when r's recorded worker, topic or source disagree.
func (o *Ops) Target(r Record) (Route, error) {
	return target(o.routes[r.DLQ], r)
}

func target(routes []Route, r Record) (Route, error) {
	e := &r.Entry
	if len(routes) == 0 {
		return Route{}, fmt.Errorf("%w: %q is not the DLQ of a configured worker", ErrNoRoute, r.DLQ)
	}
	unit := "queue"
	if r.Broker == broker.Kafka {
		unit = "topic"
	}
	if rt := routes[0]; rt.Foreign {
		// The entry's origin is another application's record: it names
		// no route, the configuration alone does (or, for an x-death
		// route, picks one of the exchanges it allows).
		if rt.Resolve == nil || r.Brief {
			return rt, nil
		}
		return resolve(rt, *e)
	}
	var rt Route
	switch {
	case e.Worker != "":
		i := slices.IndexFunc(routes, func(rt Route) bool { return rt.Worker == e.Worker })
		if i < 0 {
			return Route{}, fmt.Errorf("%w: the entry %s, but %q is not a configured worker of %s %q (%s); refusing to replay it",
				ErrOriginMismatch, claims(e), e.Worker, unit, r.DLQ, describe(routes, unit))
		}
		rt = routes[i]
	case len(routes) == 1:
		rt = routes[0]
	default:
		return Route{}, fmt.Errorf("%w: the entry names no worker and %s %q is shared by %s; refusing to guess",
			ErrOriginMismatch, unit, r.DLQ, describe(routes, unit))
	}
	if (e.OriginalTopic != "" && e.OriginalTopic != rt.Topic) || (e.Source != "" && !slices.Contains(rt.Sources, e.Source)) {
		return Route{}, fmt.Errorf("%w: the entry %s, but %s %q replays to %s; refusing to replay it",
			ErrOriginMismatch, claims(e), unit, r.DLQ, describe([]Route{rt}, unit))
	}
	return rt, nil
}

// resolve is rt.Resolve(e), checked: a route that names its target.
func resolve(rt Route, e Entry) (Route, error) {
	got, err := rt.Resolve(e)
	switch {
	case err != nil:
		return Route{}, err
	case got.Resolve != nil || got.Target == "" && got.Exchange == "":
		return Route{}, fmt.Errorf("%w: the route of %q resolved to no target", ErrOriginMismatch, rt.DLQ)
	}
	return got, nil
}

// claims says where an entry claims to come from.
func claims(e *Entry) string {
	var parts []string
	if e.Source != "" {
		parts = append(parts, fmt.Sprintf("source %q", clipName(e.Source)))
	}
	if e.OriginalTopic != "" {
		parts = append(parts, fmt.Sprintf("topic %q", clipName(e.OriginalTopic)))
	}
	if e.Worker != "" {
		parts = append(parts, fmt.Sprintf("worker %q", clipName(e.Worker)))
	}
	return "claims " + strings.Join(parts, ", ")
}

// describe names routes' workers and targets.
func describe(routes []Route, unit string) string {
	parts := make([]string, 0, len(routes))
	for _, rt := range routes {
		parts = append(parts, fmt.Sprintf("worker %q of topic %q → %s %q", rt.Worker, rt.Topic, unit, rt.Target))
	}
	return strings.Join(parts, "; ")
}

// clipName bounds a name taken from a message in an error message.
func clipName(s string) string { return truncateBytes(s, 200) }

// Mismatch is the origin problem of r, "" when r may be replayed: the
// message of Target's error (ErrOriginMismatch or ErrNoRoute). Listings
// show it beside each entry.
func (o *Ops) Mismatch(r Record) string {
	if _, err := o.Target(r); err != nil {
		return err.Error()
	}
	return ""
}
