package mem_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/mem"
	"github.com/redrive/redrive/retrypolicy"
)

// TestCountingOnTheClock: 2,000 messages, some failing once, some for
// good, some permanently, some asking to be requeued, some panicking, in
// both retry modes, drained on the clock: published = handled +
// dead-lettered, nothing lost, no duplicate, every dead letter one that
// had to be.
func TestCountingOnTheClock(t *testing.T) {
	for _, mode := range []broker.RetryMode{broker.Blocking, broker.NonBlocking} {
		t.Run(string(mode), func(t *testing.T) {
			srv, b, clk := newServer(t, mem.ServerConfig{})
			const n = 2000
			rng := rand.New(rand.NewPCG(3, 5))
			fate := map[string]string{}
			msgs := messages("cnt", n)
			wantDead := 0
			for _, m := range msgs {
				switch x := rng.IntN(100); {
				case x < 2:
					fate[m.ID] = "permanent"
				case x < 4:
					fate[m.ID] = "fatal"
				case x < 5:
					fate[m.ID] = "panic"
				case x < 15:
					fate[m.ID] = "flaky"
				case x < 20:
					fate[m.ID] = "requeue"
				default:
					fate[m.ID] = "ok"
				}
				if f := fate[m.ID]; f == "permanent" || f == "fatal" || f == "panic" {
					wantDead++
				}
			}
			var mu sync.Mutex
			requeued := map[string]bool{}
			rec := &calls{clock: clk}
			s := sub("counted", "worker", retrypolicy.Policy{MaxRetries: 2, Backoff: backoff(time.Minute, time.Hour)})
			s.RetryMode, s.Concurrency = mode, 8
			start(t, b, s, rec.handler(func(d *broker.Delivery) error {
				switch fate[d.ID] {
				case "permanent":
					return broker.Permanent(boom("bad payload"))
				case "fatal":
					return boom("always")
				case "panic":
					panic("handler bug")
				case "flaky":
					if d.Attempt == 1 {
						return boom("flaky")
					}
				case "requeue":
					mu.Lock()
					again := requeued[d.ID]
					requeued[d.ID] = true
					mu.Unlock()
					if !again {
						return broker.Requeue(boom("not now"))
					}
				}
				return nil
			}))
			for i := 0; i < n; i += 250 {
				publish(t, b, "counted", msgs[i:i+250]...)
			}
			drain(t, srv)

			handled := rec.handled()
			dead := map[string]int{}
			for _, e := range srv.DeadLetters("counted", "worker") {
				dead[e.MessageID]++
			}
			lost, dupHandled, dupDead := 0, 0, 0
			for _, m := range msgs {
				if handled[m.ID] == 0 && dead[m.ID] == 0 {
					lost++
				}
				dupHandled += max(handled[m.ID]-1, 0)
				dupDead += max(dead[m.ID]-1, 0)
			}
			t.Logf("%s: published %d, handled %d, dead-lettered %d, lost %d, duplicates %d handled / %d dead",
				mode, n, len(handled), len(dead), lost, dupHandled, dupDead)
			if lost != 0 || len(handled)+len(dead) != n || dupHandled != 0 || dupDead != 0 {
				t.Fatalf("handled %d + dead-lettered %d != published %d (lost %d, duplicates %d/%d)",
					len(handled), len(dead), n, lost, dupHandled, dupDead)
			}
			if len(dead) != wantDead {
				t.Errorf("dead-lettered %d, want %d", len(dead), wantDead)
			}
			for id := range dead {
				if f := fate[id]; f != "permanent" && f != "fatal" && f != "panic" {
					t.Errorf("%s (%s) was dead-lettered", id, f)
				}
			}
			requeues := 0
			for _, c := range rec.snapshot() {
				if fate[c.id] == "requeue" && c.err != nil {
					requeues++
					if c.attempt != 1 {
						t.Errorf("%s requeued on attempt %d", c.id, c.attempt)
					}
				}
			}
			if st := srv.Stats("counted", "worker"); st.Due+st.Delayed+st.InFlight != 0 {
				t.Errorf("left after Drain: %+v", st)
			}
			t.Logf("%d requeues, the clock at +%s", requeues, clk.Now().Sub(t0))
		})
	}
}

// TestBlockingKeepsKeyOrder: in blocking mode a message waits behind the
// retries of the earlier messages of its key, so that each key's messages
// are handled in order; in non_blocking mode they do not wait.
func TestBlockingKeepsKeyOrder(t *testing.T) {
	for _, mode := range []broker.RetryMode{broker.Blocking, broker.NonBlocking} {
		t.Run(string(mode), func(t *testing.T) {
			srv, b, clk := newServer(t, mem.ServerConfig{})
			rec := &calls{clock: clk}
			s := sub("ledger", "poster", retrypolicy.Policy{MaxRetries: 3, Backoff: backoff(time.Minute)})
			s.RetryMode, s.Concurrency = mode, 4
			start(t, b, s, rec.handler(func(d *broker.Delivery) error {
				if d.Value[0] == '0' && d.Attempt == 1 {
					return boom("first of its key fails once")
				}
				return nil
			}))
			var msgs []broker.Message
			for i := range 5 { // per key, in order: 0 1 2 3 4
				for _, k := range []string{"a", "b", "c"} {
					msgs = append(msgs, broker.Message{ID: k + string(rune('0'+i)), Key: []byte(k), Value: []byte{byte('0' + i)}})
				}
			}
			publish(t, b, "ledger", msgs...)
			idle(t, srv)
			waiting := 15 - len(rec.handled())
			drain(t, srv)
			order := map[string][]string{}
			for _, c := range rec.snapshot() {
				if c.err == nil {
					order[c.key] = append(order[c.key], c.id)
				}
			}
			for _, k := range []string{"a", "b", "c"} {
				inOrder := slices.Equal(order[k], []string{k + "0", k + "1", k + "2", k + "3", k + "4"})
				switch {
				case mode == broker.Blocking && !inOrder:
					t.Errorf("key %s handled %v, want in order", k, order[k])
				case mode == broker.NonBlocking && inOrder:
					t.Errorf("key %s handled %v: the retry of %s0 held up its key", k, order[k], k)
				}
			}
			if want := map[broker.RetryMode]int{broker.Blocking: 15, broker.NonBlocking: 3}[mode]; waiting != want {
				t.Errorf("%d messages waited for the first retries, want %d", waiting, want)
			}
		})
	}
}
