//go:build faults

package faults

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The exactly-once cases (issue 43): each runs with the inbox and again
// without it (a plain handler doing the same insert in its own
// transaction), counts every command's effects in the ledger, and prints
// the EXACTLY-ONCE EFFECTS table: with the inbox, effects applied more
// than once = 0 and lost = 0; without it, the duplicates it would have
// applied.

// TestEffectsWorkerKilledAfterCommit SIGKILLs a worker process right after
// its transaction for one command committed, before the broker's
// acknowledgement, and restarts it: that command (and whatever else the
// worker had committed in flight) is delivered again.
func TestEffectsWorkerKilledAfterCommit(t *testing.T) {
	for _, be := range effectsBrokers {
		for _, inbox := range []bool{true, false} {
			t.Run(be.name+"/"+inboxName(inbox), func(t *testing.T) {
				db := newEffectsDB(t, testenv.PostgreSQL.URL())
				topic := "faults.eo.killed." + broker.NewMessageID()[:6]
				sub := effectsSub(topic, "payer")
				b, env := be.open(t, sub)
				cmds := ids(topic, 300)
				publishAll(t, b, topic, cmds, nil)
				killAt := cmds[75]
				c, starts := newTally(), newTally()
				first := startChildCounting(t, c, starts, childEffects, childEnv(env, db, topic, sub.Group, inbox,
					fmt.Sprintf("%s=%d", envKillStep, stepCommitted), envKillAt+"="+killAt)...)
				if err := first.waitExit(time.Minute); err != nil {
					t.Fatalf("first worker: %v (%d commands handled)", err, c.distinct())
				}
				t.Logf("the worker killed itself after committing %s (%d commands handled)", killAt, c.distinct())
				second := startChildCounting(t, c, starts, childEffects, childEnv(env, db, topic, sub.Group, inbox)...)
				if !c.wait(len(cmds), 2*time.Minute) {
					t.Errorf("%d of %d commands handled after the restart", c.distinct(), len(cmds))
				}
				settle(t, env, sub)
				second.stop(t)
				r := accountEffects(t, t.Name(), inbox, cmds, db.effects(t, sub.Group), starts.counts())
				if n := starts.counts()[killAt]; n < 2 {
					t.Errorf("%s delivered %d times, want again after the kill", killAt, n)
				}
				if !inbox && r.duplicateEffects == 0 {
					t.Errorf("without the inbox nothing was applied twice: the kill after the commit did not hit")
				}
			})
		}
	}
}

// TestEffectsPostgresRestarted restarts PostgreSQL (a private cluster, a
// real fast-shutdown restart) while a worker applies commands: the
// transactions in flight fail or are cut, the deliveries are retried, and
// a commit whose answer was lost is found by the inbox.
func TestEffectsPostgresRestarted(t *testing.T) {
	pg := privatePostgres(t)
	for _, be := range effectsBrokers {
		for _, inbox := range []bool{true, false} {
			t.Run(be.name+"/"+inboxName(inbox), func(t *testing.T) {
				db := newEffectsDB(t, pg.url)
				topic := "faults.eo.pg." + broker.NewMessageID()[:6]
				sub := effectsSub(topic, "payer")
				b, env := be.open(t, sub)
				cmds := ids(topic, 600)
				c, starts := newTally(), newTally()
				stop := testenv.Consume(t, b, sub, effectsHandler(db, inbox, "", received(starts), doneIn(c)))
				var restarted sync.WaitGroup
				publishPaced(t, b, topic, cmds, 10*time.Millisecond, func(n int) {
					if n == len(cmds)/2 {
						t.Logf("restarting PostgreSQL after %d published, %d handled", n, c.distinct())
						restarted.Go(func() { pg.restart(t) })
					}
				})
				restarted.Wait()
				if !c.wait(len(cmds), 2*time.Minute) {
					t.Errorf("%d of %d commands handled after the restart", c.distinct(), len(cmds))
				}
				settle(t, env, sub)
				stop()
				accountEffects(t, t.Name(), inbox, cmds, db.effects(t, sub.Group), starts.counts())
			})
		}
	}
}

// TestEffectsRelayKilledAfterPublish runs the outbox's relay in a child
// that SIGKILLs itself after the broker confirmed its third batch and
// before the relay deleted it; another relay publishes that batch again,
// with the ids fixed when the application wrote them.
func TestEffectsRelayKilledAfterPublish(t *testing.T) {
	for _, be := range effectsBrokers {
		for _, inbox := range []bool{true, false} {
			t.Run(be.name+"/"+inboxName(inbox), func(t *testing.T) {
				db := newEffectsDB(t, testenv.PostgreSQL.URL())
				topic := "faults.eo.relay." + broker.NewMessageID()[:6]
				sub := effectsSub(topic, "ledger")
				b, env := be.open(t, sub)
				cmds := ids(topic, 300)
				for i := 0; i < len(cmds); i += 10 { // the application's transactions
					writeOutbox(t, db, topic, cmds[i:i+10])
				}
				c, starts := newTally(), newTally()
				stop := testenv.Consume(t, b, sub, effectsHandler(db, inbox, "", received(starts), doneIn(c)))
				relayEnv := append(append(append([]string{}, env...), db.env()...), envRole+"=relay")
				first := startChild(t, newTally(), childEffects, append(relayEnv, envKillAfter+"=3")...)
				if err := first.waitExit(time.Minute); err != nil {
					t.Fatalf("first relay: %v", err)
				}
				t.Logf("the relay killed itself after its third confirmed batch (%d commands handled)", c.distinct())
				second := startChild(t, newTally(), childEffects, relayEnv...)
				if !c.wait(len(cmds), 2*time.Minute) {
					t.Errorf("%d of %d commands handled after the relay's restart", c.distinct(), len(cmds))
				}
				outboxEmpty(t, db)
				settle(t, env, sub)
				second.stop(t)
				stop()
				r := accountEffects(t, t.Name(), inbox, cmds, db.effects(t, sub.Group), starts.counts())
				if r.redelivered == 0 {
					t.Errorf("no message was published twice: the relay's kill did not hit between its publish and its record")
				}
			})
		}
	}
}

// writeOutbox writes one message per command to the outbox in one
// transaction, as an application does.
func writeOutbox(t testing.TB, db *effectsDB, topic string, cmds []string) {
	t.Helper()
	tx, err := db.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	msgs := make([]broker.Message, len(cmds))
	for i, c := range cmds {
		msgs[i] = broker.Message{Key: []byte(c), Value: []byte(c)}
	}
	if err := db.store.Publish(context.Background(), tx, topic, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// outboxEmpty waits until the relays published everything.
func outboxEmpty(t testing.TB, db *effectsDB) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "the outbox empty", func() bool {
		smp, err := db.store.Sample(context.Background())
		return err == nil && smp.Unsent == 0
	})
}

// counts are a worker's deliveries (handler calls) and acknowledged
// ones, by command.
type counts struct{ starts, done *tally }

func newCounts() counts { return counts{newTally(), newTally()} }

// chain runs in this process worker A (each command's effect and its event
// to B through the outbox; unless a is nil: A runs elsewhere), the relay,
// and worker B (the event's effect), all on b, until the returned stop.
func chain(t *testing.T, b broker.Broker, db *effectsDB, subA, subB broker.Subscription, inbox bool, a *counts, bc counts) (stop func()) {
	t.Helper()
	relay, err := db.store.NewRelay(exactlyonce.RelayConfig{Broker: b, Batch: 50, RebalanceInterval: 100 * time.Millisecond, Logger: kafkatest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	stopRelay := testenv.Background(t, "relay", 30*time.Second, relay.Run)
	stopB := testenv.Consume(t, b, subB, effectsHandler(db, inbox, "", received(bc.starts), doneIn(bc.done)))
	var stopA func()
	if a != nil {
		stopA = testenv.Consume(t, b, subA, effectsHandler(db, inbox, subB.Topic, received(a.starts), doneIn(a.done)))
	}
	return func() {
		if stopA != nil {
			stopA()
		}
		stopRelay()
		stopB()
	}
}

// TestEffectsChain: worker A consumes a command, applies its effect and
// publishes the command's event to B through the outbox; A's process is
// SIGKILLed at each step of one command's handling in turn (received,
// claimed, applied, published to the outbox, committed and not acked)
// and restarted. A's effects and B's effects each equal the commands sent,
// exactly.
func TestEffectsChain(t *testing.T) {
	for _, be := range effectsBrokers {
		for step := stepReceived; step <= stepCommitted; step++ {
			t.Run(fmt.Sprintf("%s/killed %s", be.name, stepNames[step]), func(t *testing.T) {
				db := newEffectsDB(t, testenv.PostgreSQL.URL())
				id := broker.NewMessageID()[:6]
				subA, subB := effectsSub("faults.eo.a."+id, "a"), effectsSub("faults.eo.b."+id, "b")
				b, env := be.open(t, subA, subB)
				cmds := ids(subA.Topic, 40)
				publishAll(t, b, subA.Topic, cmds, nil)
				cA, cB := newCounts(), newCounts()
				stop := chain(t, b, db, subA, subB, true, nil, cB)
				envA := childEnv(env, db, subA.Topic, "a", true, envNext+"="+subB.Topic)
				first := startChildCounting(t, cA.done, cA.starts, childEffects, append(envA, fmt.Sprintf("%s=%d", envKillStep, step), envKillAt+"="+cmds[10])...)
				if err := first.waitExit(time.Minute); err != nil {
					t.Fatalf("worker A: %v", err)
				}
				second := startChildCounting(t, cA.done, cA.starts, childEffects, envA...)
				if !cB.done.wait(len(cmds), 2*time.Minute) {
					t.Errorf("B handled %d of %d commands", cB.done.distinct(), len(cmds))
				}
				settle(t, env, subA)
				outboxEmpty(t, db)
				settle(t, env, subB)
				second.stop(t)
				stop()
				accountEffects(t, t.Name()+" A", true, cmds, db.effects(t, "a"), cA.starts.counts())
				accountEffects(t, t.Name()+" B", true, cmds, db.effects(t, "b"), cB.starts.counts())
			})
		}
	}
}

// TestEffectsBrokerRestarted runs the chain (A, the relay, B) in this
// process while the broker goes away for two seconds: on Kafka a broker of
// the kfake cluster is removed and comes back; on RabbitMQ the node's
// application is stopped and started (rabbitmqctl, the TestRabbitRestarted
// shape: make faults), or, with FAULTS_RABBIT_OUTAGE=proxy, every
// connection goes through a proxy that is cut (for a shared RabbitMQ that
// must not restart).
func TestEffectsBrokerRestarted(t *testing.T) {
	for _, inbox := range []bool{true, false} {
		t.Run("rabbitmq/"+inboxName(inbox), func(t *testing.T) {
			id := broker.NewMessageID()[:6]
			subA, subB := effectsSub("faults.eo.ra."+id, "a"), effectsSub("faults.eo.rb."+id, "b")
			cfg := rabbitConfig("faults-" + id)
			outage := rabbitRestart
			if os.Getenv("FAULTS_RABBIT_OUTAGE") == "proxy" {
				u, err := url.Parse(cfg.URL)
				if err != nil {
					t.Fatal(err)
				}
				px := tcpproxy.New(t, u.Host)
				u.Host = px.Addr()
				cfg.URL = u.String()
				outage = func(t *testing.T) {
					px.SetUp(false)
					time.Sleep(2 * time.Second) // the outage
					px.SetUp(true)
				}
			}
			b, err := rabbit.New(context.Background(), cfg)
			if err != nil {
				testenv.RabbitMQ.Fail(t, err)
			}
			t.Cleanup(func() { _ = b.Close(); deleteTopology(b.Plan(subA, subB)) })
			if err := b.Declare(context.Background(), subA, subB); err != nil {
				t.Fatal(err)
			}
			brokerOutage(t, b, []string{envBrokerKind + "=rabbitmq", envPrefix + "=" + cfg.Prefix}, subA, subB, inbox, outage)
		})
	}
	for _, inbox := range []bool{true, false} {
		t.Run("kafka/"+inboxName(inbox), func(t *testing.T) {
			cluster, brokers := kafkatest.Fake(t)
			id := broker.NewMessageID()[:6]
			subA, subB := effectsSub("faults.eo.ka."+id, "a"), effectsSub("faults.eo.kb."+id, "b")
			b := kafkatest.New(t, brokers, nil)
			if err := b.Declare(context.Background(), subA, subB); err != nil {
				t.Fatal(err)
			}
			env := []string{envBrokerKind + "=kafka", envBrokers + "=" + strings.Join(brokers, ",")}
			brokerOutage(t, b, env, subA, subB, inbox, func(t *testing.T) {
				const removed = 2
				if err := cluster.RemoveNode(removed); err != nil {
					t.Errorf("remove node %d: %v", removed, err)
					return
				}
				time.Sleep(2 * time.Second) // the outage
				// A new node, as a restarted broker is to its clients: kfake
				// keeps serving the connections of a removed node, so one
				// back under the same id and port would be reached through
				// them and never lead a partition.
				if _, _, err := cluster.AddNode(-1, 0); err != nil {
					t.Errorf("add a node: %v", err)
				}
			})
		})
	}
}

// rabbitRestart stops the RabbitMQ application for two seconds and starts
// it again (TestRabbitRestarted's restart), returning once it accepts
// connections.
func rabbitRestart(t *testing.T) {
	if err := rabbitmqctl("stop_app"); err != nil {
		t.Error(err)
		return
	}
	time.Sleep(2 * time.Second) // the outage
	if err := rabbitmqctl("start_app"); err != nil {
		t.Error(err)
	}
	if err := waitAMQP(time.Minute); err != nil {
		t.Error(err)
	}
}

// brokerOutage publishes commands to A while the chain runs, calls outage
// half-way, and accounts A's and B's effects.
func brokerOutage(t *testing.T, b broker.Broker, env []string, subA, subB broker.Subscription, inbox bool, outage func(t *testing.T)) {
	db := newEffectsDB(t, testenv.PostgreSQL.URL())
	cmds := ids(subA.Topic, 400)
	cA, cB := newCounts(), newCounts()
	stop := chain(t, b, db, subA, subB, inbox, &cA, cB)
	var faults sync.WaitGroup
	publishPaced(t, b, subA.Topic, cmds, 10*time.Millisecond, func(n int) {
		if n == len(cmds)/2 {
			t.Logf("the broker goes away after %d published, %d applied by B", n, cB.done.distinct())
			faults.Go(func() { outage(t) })
		}
	})
	faults.Wait()
	if !cB.done.wait(len(cmds), 2*time.Minute) {
		t.Errorf("B handled %d of %d commands after the outage", cB.done.distinct(), len(cmds))
	}
	settle(t, env, subA)
	outboxEmpty(t, db)
	settle(t, env, subB)
	stop()
	accountEffects(t, t.Name()+" A", inbox, cmds, db.effects(t, "a"), cA.starts.counts())
	accountEffects(t, t.Name()+" B", inbox, cmds, db.effects(t, "b"), cB.starts.counts())
}
