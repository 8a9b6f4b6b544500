package rabbit_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// testConfig is a configuration with a prefix of its own.
func testConfig() rabbit.Config {
	return rabbit.Config{
		URL:    testenv.RabbitMQ.URL(),
		Prefix: "ck-" + broker.NewMessageID()[:6],
		Delay:  rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 2},
		Logger: slog.New(slog.DiscardHandler),
	}
}

func presences(checked []rabbit.Checked) map[rabbit.Presence]int {
	n := map[rabbit.Presence]int{}
	for _, c := range checked {
		n[c.Presence]++
	}
	return n
}

// Check compares with the server without changing it: on a fresh prefix
// everything is to create and nothing gets created; once declared,
// everything is kept; clashing queues and exchanges are all reported, each
// with its explanation, and the rest is still checked.
func TestCheckComparesWithTheServer(t *testing.T) {
	cfg := testConfig()
	s1 := sub("check1." + broker.NewMessageID()[:6])
	s1.MaxAge = 5 * time.Second
	s2 := sub("check2." + broker.NewMessageID()[:6])
	t.Cleanup(func() {
		if _, err := rabbit.Teardown(context.Background(), cfg, s1, s2); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	plan, err := rabbit.Plan(cfg, s1, s2)
	if err != nil {
		t.Fatal(err)
	}

	checked, err := rabbit.Check(t.Context(), cfg, s1, s2)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	if n := presences(checked); len(checked) != len(plan) || n[rabbit.Missing] != len(plan) {
		t.Fatalf("fresh prefix: %v of %d declarations, want all %q", n, len(plan), rabbit.Missing)
	}
	ch := channel(t)
	q1 := rabbit.Queue(s1.Topic, s1.Group)
	if _, err := ch.QueueDeclarePassive(q1, true, false, false, false, nil); err == nil {
		t.Fatalf("Check created %s", q1)
	}
	ch = channel(t) // the failed lookup closed it

	b, err := rabbit.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Declare(t.Context(), s1, s2); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), s1.Topic, broker.Message{Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	checked, err = b.Check(t.Context(), s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	if n := presences(checked); n[rabbit.Missing] != 0 || n[rabbit.Conflicting] != 0 || n[rabbit.Present]+n[rabbit.Unchecked] != len(plan) {
		t.Fatalf("after Declare: %v", n)
	}
	for _, c := range checked {
		if c.Name == q1 && c.Kind == "queue" && (c.Messages != 1 || !strings.Contains(c.String(), "[1 messages, 0 consumers]")) {
			t.Errorf("%s: %d messages, line %q; want 1", q1, c.Messages, c)
		}
	}

	// Two clashes: s1's group queue with another TTL, s2's DLQ with a length
	// limit. Both are reported.
	if _, err := ch.QueueDelete(q1, false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q1, true, false, false, false, amqp.Table{"x-message-ttl": int64(1000)}); err != nil {
		t.Fatal(err)
	}
	dlq2 := rabbit.DLQ(rabbit.Queue(s2.Topic, s2.Group))
	if _, err := ch.QueueDelete(dlq2, false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(dlq2, true, false, false, false, amqp.Table{"x-max-length": int64(7)}); err != nil {
		t.Fatal(err)
	}
	checked, err = rabbit.Check(t.Context(), cfg, s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	var clashes []string
	for _, c := range checked {
		if c.Presence == rabbit.Conflicting {
			clashes = append(clashes, c.Name)
			if !errors.Is(c.Err, rabbit.ErrTopologyConflict) || !strings.HasPrefix(c.String(), "conflict ") {
				t.Errorf("%s: err %v, line %q", c.Name, c.Err, c)
			}
		}
	}
	if strings.Join(clashes, ",") != q1+","+dlq2 {
		t.Fatalf("conflicts %v, want %s and %s", clashes, q1, dlq2)
	}
	msg := rabbit.Conflicts(checked).Error()
	for _, want := range []string{q1, "x-message-ttl", "1000", "5000", dlq2, "x-max-length"} {
		if !strings.Contains(msg, want) {
			t.Errorf("conflicts %q do not mention %q", msg, want)
		}
	}
	if n := presences(checked); n[rabbit.Conflicting]+n[rabbit.Present]+n[rabbit.Unchecked] != len(plan) {
		t.Errorf("with clashes: %v of %d declarations", n, len(plan))
	}
}

// Teardown deletes what Declare declared, messages included, and nothing
// else; a second one finds nothing.
func TestTeardown(t *testing.T) {
	cfg := testConfig()
	s := sub("teardown." + broker.NewMessageID()[:6])
	other := sub("teardown.other." + broker.NewMessageID()[:6])
	b, err := rabbit.New(t.Context(), cfg)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	defer b.Close()
	if err := b.Declare(t.Context(), s, other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rabbit.Teardown(context.Background(), cfg, other) })
	if err := b.Publish(t.Context(), s.Topic, broker.Message{Value: []byte("x")}, broker.Message{Value: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	removed, err := b.Teardown(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	plan := b.Plan(s.WithDefaults())
	want := 0
	for _, d := range plan {
		if d.Kind == "queue" || d.Kind == "exchange" {
			want++
		}
	}
	q := rabbit.Queue(s.Topic, s.Group)
	if len(removed) != want {
		t.Errorf("removed %d, want %d: %+v", len(removed), want, removed)
	}
	for _, r := range removed {
		if r.Kind == "queue" && r.Name == q && r.Messages != 2 {
			t.Errorf("%s held %d messages, want 2", q, r.Messages)
		}
	}
	ch := channel(t)
	for _, d := range plan {
		if d.Kind != "queue" {
			continue
		}
		if _, err := ch.QueueDeclarePassive(d.Name, true, false, false, false, nil); err == nil {
			t.Errorf("%s is still there", d.Name)
		}
		ch = channel(t)
	}
	otherQ := rabbit.Queue(other.Topic, other.Group)
	if _, err := ch.QueueDeclarePassive(otherQ, true, false, false, false, nil); err != nil {
		t.Errorf("%s (not torn down) is gone: %v", otherQ, err)
	}
	if again, err := rabbit.Teardown(t.Context(), cfg, s); err != nil || len(again) != 0 {
		t.Errorf("second teardown = %+v, %v; want nothing", again, err)
	}
}
