package operate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// A route that resolves its target per entry (a foreign RabbitMQ DLQ
// replaying where x-death says) is shown unresolved in listings (brief
// records), and resolved from the whole entry by Replay, ReplayAll and
// Reconcile; an entry it refuses is left pending by each, counted by
// ReplayAll. Every entry is replayed once or left pending: none lost,
// none twice.
func TestResolvedRoute(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Config{})
	defer s.Close()
	var mu sync.Mutex
	sent := map[string]dlq.Route{} // by replayed-from
	pub := republisherFunc(func(_ context.Context, _ dlq.Entry, to dlq.Route, from string) error {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := sent[from]; dup {
			t.Errorf("%s replayed twice", from)
		}
		sent[from] = to
		return nil
	})
	rt := dlq.Route{DLQ: "shared.dlq", Foreign: true, Exchanges: []string{"allowed"}}
	resolves := 0
	rt.Resolve = func(e dlq.Entry) (dlq.Route, error) {
		resolves++
		if e.OriginalValue == nil {
			t.Error("Resolve called with a brief entry")
		}
		ex, key, _ := strings.Cut(e.Source, "/") // the test's stand-in for x-death
		if ex != "allowed" {
			return dlq.Route{}, fmt.Errorf("%w: exchange %q is not allowed", dlq.ErrOriginMismatch, ex)
		}
		return dlq.Route{DLQ: "shared.dlq", Exchange: ex, Target: key, Foreign: true}, nil
	}
	now := time.Now()
	clock := func() time.Time { return now }
	ops, err := operate.New(operate.Config{Store: s, Republisher: pub, Logger: slog.New(slog.DiscardHandler), Routes: []dlq.Route{rt},
		Now: func() time.Time { return clock() }})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(source string) dlq.Record {
		r, _, err := s.Insert(ctx, dlq.Record{Broker: "rabbitmq", DLQ: "shared.dlq", Identity: source + fmt.Sprint(time.Now().UnixNano()),
			Entry: dlq.Entry{Source: source, OriginalValue: []byte("v"), Reason: "expired", OriginalPartition: -1, OriginalOffset: -1}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	one, bad := insert("allowed/k1"), insert("other/k2")
	page, err := s.List(ctx, dlq.Query{DLQ: "shared.dlq"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		if d := ops.Destination(r); d != "the exchange x-death names (one of allowed), with its routing key" {
			t.Errorf("listing destination = %q", d)
		}
	}
	if resolves != 0 {
		t.Errorf("listing resolved %d routes, want none (brief records)", resolves)
	}
	if _, err := ops.Replay(ctx, "shared.dlq", one.ID, "op"); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Replay(ctx, "shared.dlq", bad.ID, "op"); !errors.Is(err, dlq.ErrOriginMismatch) {
		t.Errorf("Replay of a refused origin = %v, want ErrOriginMismatch", err)
	}
	_, trail, _ := ops.Show(ctx, "shared.dlq", one.ID)
	if len(trail) != 1 || trail[0].Reason != `to exchange allowed, routing key "k1" (every queue it routes to)` {
		t.Errorf("audit = %+v, want the resolved destination", trail)
	}

	// ReplayAll: three more, one refused.
	insert("allowed/k3")
	insert("allowed/k4")
	insert("nope/k5")
	now = time.Now()
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "shared.dlq"}, operate.ReplayAllOptions{Actor: "op"})
	if err != nil || p.Replayed != 2 || p.Mismatched != 2 {
		t.Errorf("ReplayAll = %+v, %v; want 2 replayed, 2 left (the refused origins)", p, err)
	}

	// Reconcile: an entry left replaying resolves its route again.
	stuck := insert("allowed/k6")
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: "shared.dlq", ID: stuck.ID, From: []dlq.Status{dlq.StatusPending},
		To: dlq.StatusReplaying, Actor: "crashed", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	now = time.Now().Add(time.Hour)
	if n, err := ops.Reconcile(ctx); n != 1 || err != nil {
		t.Errorf("Reconcile = %d, %v; want 1", n, err)
	}

	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{"k1": "", "k3": "", "k4": "", "k6": ""}
	if len(sent) != len(want) {
		t.Errorf("sent %v, want the routing keys %v", sent, want)
	}
	for from, to := range sent {
		if _, ok := want[to.Target]; !ok || to.Exchange != "allowed" {
			t.Errorf("%s went to exchange %q key %q", from, to.Exchange, to.Target)
		}
	}
	pending, err := s.Count(ctx, dlq.Query{DLQ: "shared.dlq", Status: dlq.StatusPending})
	if err != nil || pending != 2 {
		t.Errorf("%d pending, %v; want the 2 refused", pending, err)
	}
}

// Destination names every kind of route, and says when every group of a
// topic receives a replay.
func TestRouteDestination(t *testing.T) {
	for _, tc := range []struct {
		rt   dlq.Route
		b    string
		want string
	}{
		{dlq.Route{Target: "a.w", Worker: "w"}, rabbit.Name, "queue a.w (worker w)"},
		{dlq.Route{Target: "a.retry.w", Worker: "w"}, "kafka", "topic a.retry.w (worker w)"},
		{dlq.Route{Target: "a", Worker: "w", EveryGroup: true}, "kafka", "topic a (every consumer group of it, worker w among them)"},
		{kafka.ForeignRoute("orders.DLT", "orders"), "kafka", "topic orders (every consumer group of it)"},
		{dlq.Route{Exchange: "x", Target: ""}, "rabbitmq", `exchange x, routing key "" (every queue it routes to)`},
		{dlq.Route{}, "kafka", ""},
	} {
		if got := tc.rt.Destination(tc.b); got != tc.want {
			t.Errorf("%+v on %s: %q, want %q", tc.rt, tc.b, got, tc.want)
		}
	}
	// A backend that is not linked gets the default words.
	if got := (dlq.Route{Target: "a", Worker: "w"}).Destination("memory"); got != "queue a (worker w)" {
		t.Errorf("Destination on an unlinked backend = %q", got)
	}
	if got := (dlq.Route{Target: "a", EveryGroup: true}).Destination("memory"); got != "topic a (every consumer of it)" {
		t.Errorf("Destination on an unlinked backend = %q", got)
	}
}
