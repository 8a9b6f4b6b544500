package operate_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// A foreign DLQ's route (another application's dead-letter topic) sends
// every entry to its configured target, whatever topic, worker or source
// the entry records; a DLQ without a route is refused (ErrNoRoute) and
// left pending; a foreign route is alone in its DLQ.
func TestForeignRoute(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Config{})
	defer s.Close()
	var got []dlq.Route
	pub := republisherFunc(func(_ context.Context, _ dlq.Entry, to dlq.Route, _ string) error {
		got = append(got, to)
		return nil
	})
	for _, bad := range [][]dlq.Route{
		{kafka.ForeignRoute("orders.DLT", "")},
		{kafka.ForeignRoute("orders.DLT", "orders"), {DLQ: "orders.DLT", Topic: "orders", Worker: "w", Target: "orders.retry.w"}},
		{{DLQ: "orders.DLT", Topic: "orders", Worker: "w", Target: "orders.retry.w"}, kafka.ForeignRoute("orders.DLT", "orders")},
	} {
		if _, err := operate.New(operate.Config{Store: s, Routes: bad}); err == nil {
			t.Errorf("New accepted the routes %+v", bad)
		}
	}
	ops, err := operate.New(operate.Config{Store: s, Republisher: pub, Logger: slog.New(slog.DiscardHandler),
		Routes: []dlq.Route{kafka.ForeignRoute("orders.DLT", "orders-replay")}})
	if err != nil {
		t.Fatal(err)
	}
	// The record names another topic and group: not where it goes.
	e := dlq.Entry{OriginalTopic: "payments", Worker: "spring-app", Source: "payments", Reason: "spring_dlt"}
	for _, dlqName := range []string{"orders.DLT", "lost.DLT"} {
		if _, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: dlqName, ID: "0-1", Entry: e}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Get(ctx, "orders.DLT", "0-1")
	if err != nil {
		t.Fatal(err)
	}
	if m := ops.Mismatch(r); m != "" {
		t.Errorf("Mismatch = %q, want none", m)
	}
	const dest = "topic orders-replay (every consumer group of it)"
	if d := ops.Destination(r); d != dest {
		t.Errorf("Destination = %q, want %q", d, dest)
	}
	if r, err = ops.Replay(ctx, "orders.DLT", "0-1", "op"); err != nil || r.Status != dlq.StatusReplayed {
		t.Fatalf("Replay = %v, %v", r.Status, err)
	}
	if len(got) != 1 || got[0].Target != "orders-replay" {
		t.Errorf("republished to %+v, want the configured target only", got)
	}

	lost, _ := s.Get(ctx, "lost.DLT", "0-1")
	if m := ops.Mismatch(lost); !strings.Contains(m, "not the DLQ of a configured worker") {
		t.Errorf("Mismatch of an unrouted DLQ = %q", m)
	}
	if _, err := ops.Replay(ctx, "lost.DLT", "0-1", "op"); !errors.Is(err, operate.ErrNoRoute) {
		t.Errorf("Replay of an unrouted DLQ = %v, want ErrNoRoute", err)
	}
	if lost, _ = s.Get(ctx, "lost.DLT", "0-1"); lost.Status != dlq.StatusPending || len(got) != 1 {
		t.Errorf("the unrouted entry is %s after %d republishes, want pending and none", lost.Status, len(got)-1)
	}
}
