package operate_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
)

// TestUndecodableIsNotReplayed: an entry whose message's headers the
// broker client could not decode (reason undecodable) is refused by
// Replay as an unknown message (ErrUnknownMessage), which says why, and
// stays pending; its listing shows the refusal; replay-all leaves it
// pending (counted with the mismatched) and replays the others; replayed
// as stored, it goes. Counted: the Republisher is called once for each of
// the plain entry and the one replayed as stored.
func TestUndecodableIsNotReplayed(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Config{})
	defer s.Close()
	insert := func(e dlq.Entry) dlq.Record {
		r, _, err := s.Insert(ctx, dlq.Record{Broker: "rabbitmq", DLQ: "t.w.dlq", Identity: e.MessageID, Entry: e})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	bad := insert(dlq.Entry{MessageID: "deep", Reason: string(driver.ReasonUndecodable), Worker: "w", Source: "t.w", OriginalValue: []byte("x")})
	plain := insert(dlq.Entry{MessageID: "plain", Reason: string(driver.ReasonPermanent), Worker: "w", Source: "t.w", OriginalValue: []byte("y")})
	var sent []string
	pub := republisherFunc(func(_ context.Context, e dlq.Entry, _ dlq.Route, _ string) error {
		sent = append(sent, e.MessageID)
		return nil
	})
	ops, err := operate.New(operate.Config{Store: s, Republisher: pub, Logger: slog.New(slog.DiscardHandler),
		Routes: []dlq.Route{{DLQ: "t.w.dlq", Topic: "t", Worker: "w", Target: "t.w", Sources: []string{"t.w"}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ops.Replay(ctx, bad.DLQ, bad.ID, "alice")
	if !errors.Is(err, operate.ErrUnknownMessage) || errors.Is(err, dlq.ErrOriginMismatch) || !strings.Contains(err.Error(), "could not be decoded") {
		t.Fatalf("Replay of an undecodable entry = %v, want ErrUnknownMessage saying why", err)
	}
	if _, err := ops.ReplayRoute(bad); !errors.Is(err, operate.ErrUnknownMessage) {
		t.Errorf("ReplayRoute = %v, want the refusal", err)
	}
	p, err := ops.ReplayAll(ctx, dlq.Query{DLQ: "t.w.dlq"}, operate.ReplayAllOptions{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Replayed != 1 || p.Mismatched != 1 || len(sent) != 1 || sent[0] != "plain" {
		t.Errorf("replay-all: %+v, sent %v; want the plain one replayed, the undecodable one left", p, sent)
	}
	if _, err := ops.ReplayAsStored(ctx, bad.DLQ, bad.ID, "alice"); err != nil || len(sent) != 2 || sent[1] != "deep" {
		t.Errorf("ReplayAsStored = %v, sent %v; want it sent", err, sent)
	}
	for _, r := range []dlq.Record{bad, plain} {
		got, err := s.Get(ctx, r.DLQ, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := dlq.StatusReplayed; got.Status != want {
			t.Errorf("%s is %s, want %s", got.Entry.MessageID, got.Status, want)
		}
	}
}
