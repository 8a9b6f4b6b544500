package mem_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/retrypolicy"
)

// TestKeeperAndReplay: the keeper reads the worker's DLQ through the
// seam into the in-memory store (Idle waits for it), and a replay through
// operate.Ops brings the message back, byte for byte, to that worker alone,
// attempt 1, marked replayed-from; counted: published = handled +
// stored, then every stored one handled after its replay.
func TestKeeperAndReplay(t *testing.T) {
	srv, b, clk := newServer(t, mem.ServerConfig{})
	st := memstore.New(memstore.Config{Logger: quiet})
	name := mem.DLQName("invoices", "mailer")
	k, err := keeper.New(keeper.Config{Source: b, Store: st, Broker: mem.Name,
		DLQs: map[string]broker.Severity{name: broker.SeverityCritical}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("keeper: %v", err)
		}
	})

	waitFor(t, srv, "the keeper to read the DLQ", func() bool { return srv.Stats("invoices", "mailer").Readers == 1 })

	mailer, other := &calls{clock: clk}, &calls{clock: clk}
	start(t, b, sub("invoices", "mailer", retrypolicy.Policy{}), mailer.handler(func(d *broker.Delivery) error {
		if d.Header(broker.HeaderReplayedFrom) == "" && d.Value[0] == 0xff {
			return broker.Permanent(boom("template missing"))
		}
		return nil
	}))
	start(t, b, sub("invoices", "archiver", retrypolicy.Policy{}), other.handler(nil))
	msgs := messages("inv", 10)
	for i := range 4 {
		msgs[i].Value = []byte{0xff, 0x00, byte(i)}
	}
	publish(t, b, "invoices", msgs...)
	// Idle waits for the handlers, then for the keeper to store the
	// dead letters (it reads the DLQ).
	idle(t, srv)
	if n, err := st.Count(t.Context(), dlq.Query{DLQ: name}); err != nil || n != 4 || len(mailer.handled()) != 6 {
		t.Fatalf("stored %d (%v), handled %d; want 4 + 6 = 10", n, err, len(mailer.handled()))
	}
	if left := srv.DeadLetters("invoices", "mailer"); len(left) != 0 {
		t.Errorf("%d dead letters left in the DLQ after the keeper stored them", len(left))
	}

	ops, err := operate.New(operate.Config{Store: st, Republisher: b, Logger: quiet, Routes: []dlq.Route{mem.Router{}.Route("invoices", "mailer")}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ops.ReplayAll(t.Context(), dlq.Query{DLQ: name}, operate.ReplayAllOptions{Actor: "test"})
	if err != nil || p.Replayed != 4 {
		t.Fatalf("ReplayAll = %+v, %v; want 4 replayed", p, err)
	}
	idle(t, srv)
	got := mailer.handled()
	for i, m := range msgs {
		if got[m.ID] != 1 {
			t.Errorf("%s handled %d times, want once", m.ID, got[m.ID])
		}
		if i < 4 && !bytes.Equal(m.Value, []byte{0xff, 0x00, byte(i)}) {
			t.Errorf("%s changed", m.ID)
		}
	}
	if n := len(other.snapshot()); n != 10 {
		t.Errorf("the other worker handled %d, want its 10: replays reach the failed worker alone", n)
	}
	for _, c := range mailer.snapshot() {
		if c.err == nil && c.attempt != 1 {
			t.Errorf("%s handled on attempt %d", c.id, c.attempt)
		}
	}
}
