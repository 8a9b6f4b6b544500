package operate_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// Run reconciles at start, then stops when its context ends.
func TestRunReconcilesAtStart(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Config{})
	defer s.Close()
	r, _, err := s.Insert(ctx, dlq.Record{Broker: "kafka", DLQ: "run.dlq", ID: "0-1", Entry: dlq.Entry{Source: "run"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, dlq.Transition{DLQ: r.DLQ, ID: r.ID, From: []dlq.Status{dlq.StatusPending}, To: dlq.StatusReplaying, Actor: "x", At: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pub := republisherFunc(func(context.Context, dlq.Entry, dlq.Route, string) error { return nil })
	ops, err := operate.New(operate.Config{Store: s, Republisher: pub, Logger: slog.New(slog.DiscardHandler),
		Routes: []dlq.Route{{DLQ: "run.dlq", Topic: "run", Worker: "w", Target: "run.retry.w", Sources: []string{"run"}}}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- ops.Run(rctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := s.Get(ctx, r.DLQ, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == dlq.StatusReplayed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not reconcile: entry is %s", got.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

type republisherFunc func(ctx context.Context, e dlq.Entry, to dlq.Route, from string) error

func (f republisherFunc) Republish(ctx context.Context, e dlq.Entry, to dlq.Route, from string) error {
	return f(ctx, e, to, from)
}
