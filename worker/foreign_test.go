package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/worker"
)

// TestKillSwitchHandsBackForeignMessages: the kill switch case of
// TestKillSwitchHoldsAnOutage with messages another client published
// (raw amqp091-go): without headers, with an empty table, and without any
// property but a body. Every call fails until the
// switch trips, so the messages that failed while it tripped are handed
// back (broker.Requeue); then the downstream recovers. Counted: every
// published message is handled successfully exactly once, none is
// dead-lettered, none is left in the queue, and the worker never stops.
// (A headerless message's hand-back used to panic the worker: assignment
// to entry in nil map.)
func TestKillSwitchHandsBackForeignMessages(t *testing.T) {
	rdb := testenv.RedisClient(t)
	reg := prometheus.NewRegistry()
	rt, name, topic := gateWorker(t, rdb,
		", kill_switch: {enabled: true, activation: 4, trip_ratio: 0.5, window: 5s, restart_after: 200ms, max_restart_after: 400ms}",
		worker.Config{Registerer: reg})
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	ok := map[string]int{}
	run(t, rt, name, func(_ context.Context, d *broker.Delivery) error {
		if down.Load() {
			return errors.New("payment API unreachable")
		}
		mu.Lock()
		ok[string(d.Value)]++
		mu.Unlock()
		return nil
	})
	const perKind = 10
	var msgs []amqp.Publishing
	for i := range perKind {
		msgs = append(msgs,
			amqp.Publishing{MessageId: fmt.Sprint("nh-", i), Body: fmt.Appendf(nil, "no headers %d", i)},
			amqp.Publishing{Headers: amqp.Table{}, Body: fmt.Appendf(nil, "empty table %d", i)},
			amqp.Publishing{Body: fmt.Appendf(nil, "no properties %d", i)},
		)
	}
	ch := amqpChannel(t)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	exchange := rt.Broker().(*rabbit.Broker).Names().Topics()
	for _, m := range msgs {
		dc, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), exchange, topic, true, false, m)
		if err != nil {
			t.Fatal(err)
		}
		if acked, err := dc.WaitContext(t.Context()); !acked || err != nil {
			t.Fatalf("publish %q: not confirmed (%v)", m.Body, err)
		}
	}
	key := heartbeat.Keys{}.Heartbeat(name, rt.Instance())
	waitHeartbeat(t, rdb, key, "PAUSED by the kill switch", func(h heartbeatJSON) bool {
		return h.Status == "PAUSED" && h.PausedBy == "kill_switch"
	})
	down.Store(false) // the downstream recovers
	waitFor(t, "every message handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ok) == len(msgs)
	})
	mu.Lock()
	for _, m := range msgs {
		if n := ok[string(m.Body)]; n != 1 {
			t.Errorf("%q handled %d times, want 1", m.Body, n)
		}
	}
	mu.Unlock()
	dead := depth(t, rabbit.DLQ(rabbit.Queue(topic, name)))
	if dead != 0 {
		t.Errorf("%d dead letters, want 0", dead)
	}
	waitFor(t, "the queue empty", func() bool { return depth(t, rabbit.Queue(topic, name)) == 0 })
	if trips := counter(t, reg, "worker_kill_switch_trips_total", name); trips < 1 {
		t.Errorf("worker_kill_switch_trips_total = %v, want >= 1 (nothing was handed back)", trips)
	}
	t.Logf("published %d, handled %d, dead-lettered %d", len(msgs), len(ok), dead)
}
