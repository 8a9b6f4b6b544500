package operate

import (
	"errors"
	"fmt"
	"github.com/redrive/redrive/dlq"
	"slices"
	"strings"

	"github.com/redrive/redrive/broker/driver"
)

// ErrNoRoute is wrapped when no configured worker has the entry's DLQ: a
// replay has nowhere to go (HTTP 409).
var ErrNoRoute = errors.New("no configured worker replays this DLQ")

// Target returns the route a replay of r takes: the configured worker of
// r's DLQ, the one r names when the DLQ is shared. It is an error wrapping
// ErrNoRoute when no worker is configured for the DLQ, or ErrOriginMismatch
// (with a message naming where the entry claims to come from and where its
// DLQ replays to) when r's recorded worker, topic or source disagree.
func (o *Ops) Target(r dlq.Record) (dlq.Route, error) {
	return target(o.routes[r.DLQ], r)
}

func target(routes []dlq.Route, r dlq.Record) (dlq.Route, error) {
	e := &r.Entry
	if len(routes) == 0 {
		return dlq.Route{}, fmt.Errorf("%w: %q is not the DLQ of a configured worker", ErrNoRoute, r.DLQ)
	}
	unit := driver.WordsOf(r.Broker).Unit
	if rt := routes[0]; rt.Foreign {
		// The entry's origin is another application's record: it names
		// no route, the configuration alone does (or, for an x-death
		// route, picks one of the exchanges it allows).
		if rt.Resolve == nil || r.Brief {
			return rt, nil
		}
		return resolve(rt, *e)
	}
	var rt dlq.Route
	switch {
	case e.Worker != "":
		i := slices.IndexFunc(routes, func(rt dlq.Route) bool { return rt.Worker == e.Worker })
		if i < 0 {
			return dlq.Route{}, fmt.Errorf("%w: the entry %s, but %q is not a configured worker of %s %q (%s); refusing to replay it",
				dlq.ErrOriginMismatch, claims(e), e.Worker, unit, r.DLQ, describe(routes, unit))
		}
		rt = routes[i]
	case len(routes) == 1:
		rt = routes[0]
	default:
		return dlq.Route{}, fmt.Errorf("%w: the entry names no worker and %s %q is shared by %s; refusing to guess",
			dlq.ErrOriginMismatch, unit, r.DLQ, describe(routes, unit))
	}
	if (e.OriginalTopic != "" && e.OriginalTopic != rt.Topic) || (e.Source != "" && !slices.Contains(rt.Sources, e.Source)) {
		return dlq.Route{}, fmt.Errorf("%w: the entry %s, but %s %q replays to %s; refusing to replay it",
			dlq.ErrOriginMismatch, claims(e), unit, r.DLQ, describe([]dlq.Route{rt}, unit))
	}
	return rt, nil
}

// resolve is rt.Resolve(e), checked: a route that names its target.
func resolve(rt dlq.Route, e dlq.Entry) (dlq.Route, error) {
	got, err := rt.Resolve(e)
	switch {
	case err != nil:
		return dlq.Route{}, err
	case got.Resolve != nil || got.Target == "" && got.Exchange == "":
		return dlq.Route{}, fmt.Errorf("%w: the route of %q resolved to no target", dlq.ErrOriginMismatch, rt.DLQ)
	}
	return got, nil
}

// claims says where an entry claims to come from.
func claims(e *dlq.Entry) string {
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
func describe(routes []dlq.Route, unit string) string {
	parts := make([]string, 0, len(routes))
	for _, rt := range routes {
		parts = append(parts, fmt.Sprintf("worker %q of topic %q → %s %q", rt.Worker, rt.Topic, unit, rt.Target))
	}
	return strings.Join(parts, "; ")
}

// clipName bounds a name taken from a message in an error message.
func clipName(s string) string {
	n := min(len(s), 200)
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Mismatch is the origin problem of r, "" when r may be replayed: the
// message of Target's error (ErrOriginMismatch or ErrNoRoute). Listings
// show it beside each entry.
func (o *Ops) Mismatch(r dlq.Record) string {
	if _, err := o.Target(r); err != nil {
		return err.Error()
	}
	return ""
}
