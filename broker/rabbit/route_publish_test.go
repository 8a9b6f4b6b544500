package rabbit_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
)

// In route mode PublishDelayed goes straight into the route: nothing waits
// in a group queue (no consumer moves it), the broker fans it out to every
// group of the topic when it is due, never early, and a delay beyond the
// route's range finishes through the group's consumer.
func TestRoutePublishDelayedSkipsTheGroupQueue(t *testing.T) {
	topic := "routepub." + broker.NewMessageID()[:6]
	subs := []broker.Subscription{sub(topic), sub(topic)}
	subs[0].Group, subs[1].Group = "g1", "g2"
	// 100 ms × 2^k, 3 levels: the route covers 700 ms.
	b := newBroker(t, func(c *rabbit.Config) { c.Delay.Mode = rabbit.DelayRoute }, subs...)
	ctx := t.Context()
	if err := b.Declare(ctx, subs...); err != nil {
		t.Fatal(err)
	}
	delays := map[string]time.Duration{
		"within": 500 * time.Millisecond,  // 5 units: digits 1.0.1, two queues
		"beyond": 1000 * time.Millisecond, // 700 ms routed, 300 ms more from the consumer
	}
	sent := map[string]time.Time{}
	for id, d := range delays {
		sent[id] = time.Now()
		if err := b.PublishDelayed(ctx, topic, d, broker.Message{ID: id, Value: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	ch := channel(t)
	for _, s := range subs {
		if n := depth(t, ch, rabbit.Queue(s.Topic, s.Group)); n != 0 {
			t.Fatalf("%s holds %d messages right after PublishDelayed: it should wait in the route", rabbit.Queue(s.Topic, s.Group), n)
		}
	}

	type arrival struct {
		group, id, passes string
		at                time.Time
	}
	var (
		mu  sync.Mutex
		got []arrival
		all = make(chan struct{})
	)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(func() {
			err := b.Consume(cctx, s, func(_ context.Context, d *broker.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, arrival{s.Group, d.ID, d.Headers[rabbit.HeaderTierPasses], time.Now()})
				if len(got) == 2*len(delays) {
					close(all)
				}
				return nil
			})
			if err != nil {
				t.Errorf("consume %s: %v", s.Group, err)
			}
		})
	}
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("arrived: %+v, want each of %d messages in both groups", got, len(delays))
	}
	cancel()
	wg.Wait()
	seen := map[string]int{}
	for _, a := range got {
		seen[a.group+"/"+a.id]++
		if early := sent[a.id].Add(delays[a.id]).Sub(a.at); early > 0 {
			t.Errorf("%s: %s arrived %s early", a.group, a.id, early)
		}
	}
	for _, s := range subs {
		for id := range delays {
			if n := seen[s.Group+"/"+id]; n != 1 {
				t.Errorf("%s got %s %d times, want once", s.Group, id, n)
			}
		}
	}
	for _, a := range got {
		if a.id == "within" && a.passes != strconv.Itoa(2) {
			t.Errorf("%s: %s passed %s delay queues, want 2 (digits 1.0.1)", a.group, a.id, a.passes)
		}
	}
}

// A topic whose first word is the route's topic marker "@" could match a
// group queue's own binding on the final exchange: it is refused by name.
func TestRouteReservedTopicWord(t *testing.T) {
	b := newBroker(t, func(c *rabbit.Config) { c.Delay.Mode = rabbit.DelayRoute })
	for _, topic := range []string{"@", "@.orders"} {
		err := b.Declare(t.Context(), sub(topic))
		if err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("Declare(%q) = %v, want the reserved-word error", topic, err)
		}
		if want := strconv.Quote(topic); !strings.Contains(err.Error(), want) {
			t.Errorf("Declare(%q) error %q does not name the topic", topic, err)
		}
		cerr := b.Consume(t.Context(), sub(topic), func(context.Context, *broker.Delivery) error { return nil })
		if cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("Consume(%q) = %v, want %v", topic, cerr, err)
		}
	}
}

// A topic bound the way an earlier redrive declared it (no route binding
// for delayed publishes) still gets its delayed messages, through its
// group queues, without the route's expiration (250 ms is not a whole
// number of resolutions: on the route it would carry one, and expire in
// the group queue); a topic nobody consumes is ErrUnroutable, as a plain
// publish is, and nothing is parked.
func TestRoutePublishDelayedFallsBack(t *testing.T) {
	topic := "routeold." + broker.NewMessageID()[:6]
	s := sub(topic)
	b := newBroker(t, func(c *rabbit.Config) { c.Delay.Mode = rabbit.DelayRoute }, s)
	ctx := t.Context()
	if err := b.Declare(ctx, s); err != nil {
		t.Fatal(err)
	}
	ch := channel(t)
	n := b.Names()
	if err := ch.ExchangeUnbind(n.RouteLevel(0), "*.*.*.@."+topic, n.RouteTopics(), false, nil); err != nil {
		t.Fatal(err)
	}
	const delay = 250 * time.Millisecond
	start := time.Now()
	if err := b.PublishDelayed(ctx, topic, delay, broker.Message{ID: "old", Value: []byte("x")}); err != nil {
		t.Fatalf("PublishDelayed to a topic bound the old way: %v", err)
	}
	q := rabbit.Queue(s.Topic, s.Group)
	if d := depth(t, ch, q); d != 1 {
		t.Fatalf("%s holds %d messages, want the delayed one waiting for its consumer's hop", q, d)
	}
	m, ok, err := ch.Get(q, false)
	if err != nil || !ok {
		t.Fatalf("get from %s: %v, %v", q, ok, err)
	}
	if m.Expiration != "" {
		t.Errorf("in %s with expiration %q: the route's, it would expire there", q, m.Expiration)
	}
	if err := m.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(cctx, s, func(_ context.Context, d *broker.Delivery) error {
			if d.ID == "old" {
				got <- time.Now()
			}
			return nil
		})
	}()
	select {
	case at := <-got:
		if early := start.Add(delay).Sub(at); early > 0 {
			t.Errorf("arrived %s early", early)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the delayed message did not arrive")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	err = b.PublishDelayed(ctx, "nobody.listens."+broker.NewMessageID()[:6], time.Second, broker.Message{Value: []byte("x")})
	if !errors.Is(err, broker.ErrUnroutable) {
		t.Fatalf("PublishDelayed to a topic without queues = %v, want ErrUnroutable", err)
	}
	if d := depth(t, ch, n.Unroutable()); d != 0 {
		t.Errorf("%s holds %d messages after an unroutable delayed publish", n.Unroutable(), d)
	}
}
