//go:build faults

package faults

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/rabbitcluster"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// The cluster cases run on a three-node RabbitMQ cluster of their own
// (internal/testsupport/rabbitcluster: rrc1..rrc3@localhost on 127.0.0.1:5681-5683),
// started by the first of them and deleted when the suite ends, whatever
// happens; a run that crashed leaves nodes that the next run removes
// first. The node on 5672 is never touched.
var theCluster struct {
	once    sync.Once
	mu      sync.Mutex
	c       *rabbitcluster.Cluster
	err     error
	startUp string // for the table
}

// cluster returns the suite's cluster, starting it on first use. Every
// node runs when it returns.
func cluster(t testing.TB) *rabbitcluster.Cluster {
	t.Helper()
	theCluster.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c, err := rabbitcluster.Start(ctx, rabbitcluster.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		theCluster.mu.Lock()
		theCluster.c, theCluster.err = c, err
		if err == nil {
			theCluster.startUp = fmt.Sprintf("cluster: %d RabbitMQ nodes started and joined in %s", len(c.Nodes), c.StartUp.Round(100*time.Millisecond))
			fmt.Fprintln(os.Stderr, "faults: "+theCluster.startUp)
		}
		theCluster.mu.Unlock()
	})
	theCluster.mu.Lock()
	c, err := theCluster.c, theCluster.err
	theCluster.mu.Unlock()
	if err != nil {
		t.Fatalf("the three-node RabbitMQ cluster did not start (it needs root and Debian's rabbitmq-server): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Heal(ctx); err != nil {
		t.Fatalf("cluster: %v", err)
	}
	return c
}

// stopCluster deletes the cluster if it was started.
func stopCluster() {
	theCluster.mu.Lock()
	defer theCluster.mu.Unlock()
	if theCluster.c == nil {
		return
	}
	if err := theCluster.c.Stop(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "faults: stop the cluster: %v\n", err)
	}
	theCluster.c = nil
}

// clusterStartUp describes the cluster's start-up for the table.
func clusterStartUp() string {
	theCluster.mu.Lock()
	defer theCluster.mu.Unlock()
	return theCluster.startUp
}

// stopClusterOnSignal deletes the cluster when the suite is interrupted
// (SIGINT, SIGTERM), then exits.
func stopClusterOnSignal() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "faults: %v: deleting the cluster\n", s)
		stopCluster()
		os.Exit(1)
	}()
}

// clusterBroker connects a broker to the cluster, to node first first
// (the others follow in order in rabbitmq.urls), with quorum queues.
func clusterBroker(t testing.TB, c *rabbitcluster.Cluster, first int, prefix string) *rabbit.Broker {
	t.Helper()
	cfg := rabbitConfig(prefix)
	cfg.URL, cfg.URLs = "", c.URLsFrom(first)
	cfg.QueueType = rabbit.Quorum
	cfg.Delay = rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 4, Levels: 3}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("client", fmt.Sprintf("node%d-first", first+1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := rabbit.New(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to the cluster: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// leaderOf returns the node leading quorum queue q.
func leaderOf(t testing.TB, c *rabbitcluster.Cluster, q string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	i, err := c.Leader(ctx, q)
	if err != nil {
		t.Fatalf("leader of %s: %v", q, err)
	}
	return i
}

// clusterCase is the set-up of a cluster case: a topic and a prefix of its
// own, its subscription declared through the first node (RabbitMQ puts a
// quorum queue's leader on the node of the client that declares it), and
// the cluster healed when the test ends unless it healed it itself.
type clusterCase struct {
	c             *rabbitcluster.Cluster
	topic, prefix string
	sub           broker.Subscription
	setup         *rabbit.Broker // connected to the first node
	healed        bool
}

func newClusterCase(t testing.TB, name string) *clusterCase {
	t.Helper()
	id := broker.NewMessageID()[:6]
	cc := &clusterCase{c: cluster(t), topic: "faults.cluster." + name + "." + id, prefix: "fc-" + id}
	cc.sub = rabbitSub(cc.topic)
	cc.setup = clusterBroker(t, cc.c, 0, cc.prefix)
	if err := cc.setup.Declare(context.Background(), cc.sub); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !cc.healed { // the test ended before it healed the cluster
			heal(t, cc.c)
		}
	})
	return cc
}

// heal brings every node back for the rest of the test.
func (cc *clusterCase) heal(t testing.TB) {
	t.Helper()
	heal(t, cc.c)
	cc.healed = true
}

// broker connects a broker of the case to node first first.
func (cc *clusterCase) broker(t testing.TB, first int) *rabbit.Broker {
	t.Helper()
	return clusterBroker(t, cc.c, first%len(cc.c.Nodes), cc.prefix)
}

// heal brings every node back, failing t when it cannot.
func heal(t testing.TB, c *rabbitcluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	if err := c.Heal(ctx); err != nil {
		t.Errorf("heal the cluster: %v", err)
		return
	}
	t.Logf("every node runs again (%s)", time.Since(began).Round(100*time.Millisecond))
}

// publishAround publishes batches of 10 new messages, one batch every
// every, around a fault: fault starts in its own goroutine after before
// batches, and publishing goes on until it returned and after more batches
// went out, however long the fault takes (rabbitmqctl takes seconds on a
// busy machine). It returns the ids published, in order.
func publishAround(t testing.TB, b broker.Broker, topic string, every time.Duration, before, after int, fault func()) []string {
	t.Helper()
	ticker := time.NewTicker(every) // the traffic's rate
	defer ticker.Stop()
	deadline := time.Now().Add(3 * time.Minute)
	faulted := make(chan struct{})
	var ids []string
	failed, left := 0, -1 // left: batches still to send once the fault is over
	for n := 0; left != 0; n++ {
		switch {
		case n == before:
			go func() { defer close(faulted); fault() }()
		case left < 0 && n > before:
			select {
			case <-faulted:
				left = after
				t.Logf("fault over after %d batches (%d messages); %d more batches follow", n, len(ids), after)
			default:
			}
		}
		if left > 0 {
			left--
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fault did not end within 3 minutes")
		}
		<-ticker.C
		batch := make([]string, 10)
		for i := range batch {
			batch[i] = fmt.Sprintf("%s-%05d", topic, len(ids)+i)
		}
		failed += publishBatch(t, b, topic, batch, deadline)
		ids = append(ids, batch...)
	}
	t.Logf("publisher: %d messages published, %d failed Publish calls retried", len(ids), failed)
	return ids
}

// TestClusterLeaderStopped stops the RabbitMQ application of the node that
// leads a quorum group queue (rabbitmqctl stop_app) while messages are
// published and consumed: the consumer, connected to that node, fails over
// to the next URL; the queue elects a new leader on the two nodes left;
// the publisher, on another node, waits out the election. The node is
// started again once everything was published. Every message is handled.
func TestClusterLeaderStopped(t *testing.T) {
	cc := newClusterCase(t, "leader")
	c, topic, sub := cc.c, cc.topic, cc.sub
	q := rabbit.Queue(topic, sub.Group)
	leader := leaderOf(t, c, q)
	consumer := cc.broker(t, leader)
	publisher := cc.broker(t, leader+1)

	handled := newTally()
	stop := consume(t, consumer, sub, handled)
	published := publishAround(t, publisher, topic, 20*time.Millisecond, 25, 100, func() {
		t.Logf("stop_app on %s, the leader of %s (%d handled)", c.Nodes[leader].Name, q, handled.distinct())
		if err := c.StopApp(context.Background(), leader); err != nil {
			t.Error(err)
			return
		}
		t.Logf("stopped (%d handled)", handled.distinct())
	})
	if now := leaderOf(t, c, q); now == leader {
		t.Errorf("%s still leads %s after stop_app", c.Nodes[leader].Name, q)
	} else {
		t.Logf("new leader: %s", c.Nodes[now].Name)
	}
	cc.heal(t)
	if !handled.wait(len(published), 2*time.Minute) {
		t.Errorf("%d of %d messages handled two minutes after the node came back", handled.distinct(), len(published))
	}
	stop()
	account(t, published, handled.counts(), deadLettersAt(t, c.Nodes[(leader+1)%len(c.Nodes)].URL(), sub))
}

// TestClusterPublisherNodeKilled SIGKILLs the node a publisher is
// connected to while it publishes batches with confirms: the publisher
// sends what was not confirmed again on the next node (duplicates allowed,
// losses not); the queue's leader and the consumer are on other nodes. The
// killed node boots again and rejoins.
func TestClusterPublisherNodeKilled(t *testing.T) {
	cc := newClusterCase(t, "kill")
	c, topic, sub := cc.c, cc.topic, cc.sub
	leader := leaderOf(t, c, rabbit.Queue(topic, sub.Group))
	victim := (leader + 1) % len(c.Nodes)
	publisher := cc.broker(t, victim)
	consumer := cc.broker(t, leader+2)

	handled := newTally()
	stop := consume(t, consumer, sub, handled)
	// The fault runs beside the publisher: the SIGKILL lands while a batch
	// is in flight (a confirmed batch takes most of each tick).
	published := publishAround(t, publisher, topic, 5*time.Millisecond, 50, 100, func() {
		t.Logf("SIGKILL %s, the publisher's node (%d handled)", c.Nodes[victim].Name, handled.distinct())
		if err := c.Kill(victim); err != nil {
			t.Error(err)
		}
	})
	cc.heal(t)
	if !handled.wait(len(published), 2*time.Minute) {
		t.Errorf("%d of %d messages handled two minutes after the node came back", handled.distinct(), len(published))
	}
	stop()
	account(t, published, handled.counts(), deadLettersAt(t, c.Nodes[leader].URL(), sub))
}

// TestClusterDelayLeaderKilled publishes delayed messages that all wait in
// one quorum delay level, and SIGKILLs the node leading that level while
// they wait: a new leader expires them on time, at-least-once
// dead-lettering moves them on, and every message is handled, none before
// its delay.
func TestClusterDelayLeaderKilled(t *testing.T) {
	cc := newClusterCase(t, "delay")
	c, topic, sub := cc.c, cc.topic, cc.sub
	// 4.8 s = 3 × 1.6 s: with tiers 100 ms, 400 ms, 1.6 s every message
	// waits in the one level queue of digit 3 at level 2.
	const delay = 4800 * time.Millisecond
	level := cc.setup.Names().RouteQueue(2, 3)
	victim := leaderOf(t, c, level)
	publisher := cc.broker(t, victim+1)
	consumer := cc.broker(t, victim+2)

	published := ids(topic, 500)
	var mu sync.Mutex
	due := map[string]time.Time{} // earliest publish time + delay of each id
	handled := newTally()
	early := 0
	var lateness []time.Duration
	stop := testenv.Consume(t, consumer, sub, func(_ context.Context, d *broker.Delivery) error {
		now := time.Now()
		mu.Lock()
		if now.Before(due[d.ID]) {
			early++
			t.Errorf("%s handled %s before its delay was over", d.ID, due[d.ID].Sub(now))
		}
		lateness = append(lateness, now.Sub(due[d.ID]))
		mu.Unlock()
		handled.add(d.ID)
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for start := 0; start < len(published); start += 50 {
		batch := make([]broker.Message, 0, 50)
		mu.Lock()
		for _, id := range published[start:min(start+50, len(published))] {
			if _, ok := due[id]; !ok {
				due[id] = time.Now().Add(delay)
			}
			batch = append(batch, broker.Message{ID: id, Value: []byte(id)})
		}
		mu.Unlock()
		if err := publisher.PublishDelayed(ctx, topic, delay, batch...); err != nil {
			t.Fatalf("publish delayed batch at %d: %v", start, err)
		}
	}
	// Every message is confirmed, so stored in the level queue, and waits
	// there for 4.8 s: kill the level's leader now.
	published0 := time.Now()
	if n := handled.distinct(); n > 0 {
		t.Fatalf("%d messages handled before the kill: publishing took longer than the delay", n)
	}
	t.Logf("SIGKILL %s, the leader of %s, while %d messages wait in it", c.Nodes[victim].Name, level, len(published))
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	if !handled.wait(len(published), 2*time.Minute) {
		t.Errorf("%d of %d delayed messages handled two minutes after the kill", handled.distinct(), len(published))
	}
	t.Logf("all handled %s after the last publish; new leader of %s: %s", time.Since(published0).Round(time.Millisecond), level,
		c.Nodes[leaderOf(t, c, level)].Name)
	cc.heal(t)
	stop()
	mu.Lock()
	worst := time.Duration(0)
	for _, l := range lateness {
		worst = max(worst, l)
	}
	t.Logf("lateness: worst %s over %d deliveries; early %d", worst.Round(time.Millisecond), len(lateness), early)
	mu.Unlock()
	account(t, published, handled.counts(), deadLettersAt(t, c.Nodes[(victim+1)%len(c.Nodes)].URL(), sub))
}
