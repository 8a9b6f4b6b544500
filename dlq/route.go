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
	// Foreign marks the route of another application's dead-letter topic
	// (ForeignRoute): every entry of DLQ replays to Target, whatever
	// origin it records (that application's, not redrive's workers').
	Foreign bool
}

// ForeignRoute is the route of another application's dead-letter topic
// dlqName (a Spring Kafka "orders.DLT", a Kafka Connect "dlq-jdbc-sink"):
// its entries replay to the topic target the operator configured, which
// every consumer of that topic reads (no worker), never to the topic a
// record's headers name.
func ForeignRoute(dlqName, target string) Route {
	return Route{DLQ: dlqName, Topic: target, Target: target, Foreign: true}
}

// ErrOriginMismatch is wrapped when an entry's recorded origin (worker,
// topic, source) disagrees with the route its DLQ's configuration gives,
// or when its DLQ is shared and the entry names no configured worker. Such
// an entry is kept and shown, and refused on replay (HTTP 409); replay-all
// skips and counts it.
var ErrOriginMismatch = errors.New("origin mismatch")

// ErrNoRoute is wrapped when no configured worker has the entry's DLQ: a
// replay has nowhere to go (HTTP 409).
var ErrNoRoute = errors.New("no configured worker replays this DLQ")

// ErrNotReplayable is wrapped when an entry cannot go back as it came: the
// broker client could not decode its message's headers (reason
// undecodable), so the entry keeps their refused bytes, not the headers,
// and a replay would send either a message that never existed (no
// headers) or the same refused headers (dead-lettered again). Such an
// entry is kept and shown, and refused on replay (HTTP 409); replay-all
// skips it and counts it with the mismatched.
var ErrNotReplayable = errors.New("not replayable")

// Target returns the route a replay of r takes: the configured worker of
// r's DLQ, the one r names when the DLQ is shared. It is an error wrapping
// ErrNoRoute when no worker is configured for the DLQ, ErrOriginMismatch
// (with a message naming where the entry claims to come from and where its
// DLQ replays to) when r's recorded worker, topic or source disagree, or
// ErrNotReplayable when its message could not be decoded.
func (o *Ops) Target(r Record) (Route, error) {
	return target(o.routes[r.DLQ], r)
}

func target(routes []Route, r Record) (Route, error) {
	e := &r.Entry
	if e.Reason == string(broker.ReasonUndecodable) {
		return Route{}, fmt.Errorf("%w: the broker client could not decode this message's headers (reason undecodable); "+
			"the entry keeps their raw bytes, not the headers, so a replay could not send the message as it came: "+
			"download it and publish a repaired copy, then discard the entry", ErrNotReplayable)
	}
	if len(routes) == 0 {
		return Route{}, fmt.Errorf("%w: %q is not the DLQ of a configured worker", ErrNoRoute, r.DLQ)
	}
	unit := "queue"
	if r.Broker == broker.Kafka {
		unit = "topic"
	}
	if routes[0].Foreign {
		// The entry's origin is another application's record: it names
		// no route, the configuration alone does.
		return routes[0], nil
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
