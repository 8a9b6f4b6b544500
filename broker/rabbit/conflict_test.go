package rabbit_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
)

// Moving to quorum queues over classic ones: Apply reports every queue
// whose type differs, one line each, with the messages it holds and the
// setting that decides it.
func TestQueueTypeConflictNamesEveryQueue(t *testing.T) {
	s := sub("migrate." + broker.NewMessageID()[:6])
	var cfg rabbit.Config
	b := newBroker(t, func(c *rabbit.Config) { cfg = *c }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), s.Topic, broker.Message{Value: []byte("a")}, broker.Message{Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	cfg.QueueType = rabbit.Quorum
	err := rabbit.Apply(t.Context(), cfg, s)
	if !errors.Is(err, rabbit.ErrTopologyConflict) {
		t.Fatalf("Apply = %v, want ErrTopologyConflict", err)
	}
	var lines []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if strings.Contains(e.Error(), "\n") {
			t.Errorf("conflict spans lines: %q", e)
		}
		lines = append(lines, e.Error())
	}
	t.Logf("conflicts:\n%s", strings.Join(lines, "\n"))
	delay, _ := rabbit.DelayQueues(cfg)
	q := rabbit.Queue(s.Topic, s.Group)
	want := map[string]string{ // queue -> what its line must say
		q:                      `"` + q + `" is classic (2 messages ready, 0 consumers) but rabbitmq.queue_type is quorum`,
		rabbit.DLQ(q):          "rabbitmq.queue_type",
		b.Names().Unroutable(): "rabbitmq.queue_type",
		delay[len(delay)-1]:    "rabbitmq.delay.queue_type",
	}
	for name, says := range want {
		found := false
		for _, l := range lines {
			if strings.Contains(l, `queue "`+name+`"`) {
				found = true
				if !strings.Contains(l, says) || !strings.Contains(l, "docs/production.md") {
					t.Errorf("line for %s = %q, want it to say %q and point to docs/production.md", name, l, says)
				}
			}
		}
		if !found {
			t.Errorf("no conflict reported for %s in:\n%s", name, strings.Join(lines, "\n"))
		}
	}
	if n := 3 + len(delay); len(lines) != n {
		t.Errorf("%d conflicts, want %d (group queue, DLQ, unroutable, %d delay queues):\n%s", len(lines), n, len(delay), strings.Join(lines, "\n"))
	}
}

// Changing max_claims on a quorum queue changes only the broker's backstop
// limit: the queue is kept as it is, with a warning, not a conflict. So is
// a quorum queue declared before max_claims became its delivery limit.
func TestDeliveryLimitChangeKeepsTheQueue(t *testing.T) {
	s := sub("dlchange." + broker.NewMessageID()[:6])
	old := sub("dlnone." + broker.NewMessageID()[:6])
	logs := make(warnings, 16)
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType = rabbit.Quorum; c.Logger = slog.New(logs) }, s, old)
	for _, tt := range []struct {
		sub   *broker.Subscription
		first int
		then  []int
	}{
		{&s, 2, []int{5, 0}},
		{&old, 0, []int{5}}, // declared without a limit: a quorum queue of an older redrive
	} {
		tt.sub.MaxClaims = tt.first
		if err := b.Declare(t.Context(), *tt.sub); err != nil {
			t.Fatal(err)
		}
		for _, n := range tt.then {
			tt.sub.MaxClaims = n
			if err := b.Declare(t.Context(), *tt.sub); err != nil {
				t.Fatalf("Declare with max_claims %d over a queue of delivery limit %d: %v", n, tt.first, err)
			}
			logs.await(t, "keeps its delivery limit")
		}
	}
}
