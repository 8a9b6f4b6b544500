package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// publishRaw publishes msgs with the raw client, as another application
// would, to exchange with routing key key, and waits for each confirm.
func publishRaw(t *testing.T, ch *amqp.Channel, exchange, key string, msgs ...amqp.Publishing) {
	t.Helper()
	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm mode: %v", err)
	}
	for i, m := range msgs {
		dc, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), exchange, key, true, false, m)
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if ok, err := dc.WaitContext(t.Context()); !ok || err != nil {
			t.Fatalf("publish %d: not confirmed (%v)", i, err)
		}
	}
}

// bare are messages as other clients send them, told apart by their
// bodies: no headers, an empty header table, no properties at all, and
// nothing at all (an empty body).
var bare = []amqp.Publishing{
	{MessageId: "no-headers", ContentType: "text/plain", Body: []byte("no headers")},
	{Headers: amqp.Table{}, MessageId: "empty-table", Body: []byte("empty table")},
	{Body: []byte("no properties")},
	{},
}

// TestForeignMessagesHandedBack: messages published by another client
// without headers (nil table, empty table, no properties, nothing at all)
// are handed back by their handler (broker.Requeue) twice each, then
// handled. Counted: every message is handled once successfully after
// exactly three calls, all with attempt 1, and none is dead-lettered or
// left behind. (A headerless message's hand-back used to panic the
// worker: assignment to entry in nil map.)
func TestForeignMessagesHandedBack(t *testing.T) {
	s := sub(testenv.Name(t))
	s.Policy = retrypolicy.Policy{MaxRetries: 1, Backoff: retrypolicy.Schedule{Delays: []time.Duration{50 * time.Millisecond}}}
	b := newBroker(t, nil, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	type call struct {
		body    string
		attempt int
	}
	var calls testenv.Recorder[call]
	const handBacks = 2
	var mu sync.Mutex
	seen := map[string]int{}
	stop := testenv.Consume(t, b, s, func(_ context.Context, d *broker.Delivery) error {
		body := string(d.Value)
		calls.Add(call{body, d.Attempt})
		mu.Lock()
		seen[body]++
		n := seen[body]
		mu.Unlock()
		if n <= handBacks {
			return broker.Requeue(errors.New("downstream busy"))
		}
		return nil
	})
	publishRaw(t, channel(t), b.Names().Topics(), s.Topic, bare...)
	want := len(bare) * (handBacks + 1)
	got := calls.WaitUntil(t, 30*time.Second, fmt.Sprintf("%d calls", want), func(c []call) bool { return len(c) >= want })
	stop()
	per := map[string][]int{}
	for _, c := range got {
		per[c.body] = append(per[c.body], c.attempt)
	}
	for _, m := range bare {
		if as := per[string(m.Body)]; !slices.Equal(as, []int{1, 1, 1}) {
			t.Errorf("message %q: attempts %v, want [1 1 1] (two hand-backs, then handled)", m.Body, as)
		}
	}
	if len(got) != want || len(per) != len(bare) {
		t.Errorf("%d calls for %d messages, want %d for %d", len(got), len(per), want, len(bare))
	}
	ch := channel(t)
	q := rabbit.Queue(s.Topic, s.Group)
	if n := depth(t, ch, rabbit.DLQ(q)); n != 0 {
		t.Errorf("%d dead letters, want 0", n)
	}
	if n := depth(t, ch, q); n != 0 {
		t.Errorf("%d messages left in %s, want 0", n, q)
	}
}
