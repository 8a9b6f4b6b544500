//go:build faults

package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/crashtest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

const childRabbit = "rabbit"

// rabbitConfig is the configuration of every RabbitMQ broker of the suite,
// parent and child: short delay tiers under prefix.
func rabbitConfig(prefix string) rabbit.Config {
	return rabbit.Config{
		URL:    testenv.RabbitMQ.URL(),
		Prefix: prefix,
		Delay:  rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3},
		Logger: slog.New(slog.DiscardHandler),
	}
}

// rabbitSub is the subscription of the RabbitMQ cases.
func rabbitSub(topic string) broker.Subscription {
	return broker.Subscription{
		Topic: topic, Group: "g",
		Policy:          retrypolicy.Policy{MaxRetries: 2},
		Concurrency:     4,
		Prefetch:        16,
		ShutdownTimeout: 5 * time.Second,
	}
}

// newRabbit connects a broker under a prefix of its own and deletes its
// topology when t ends. It returns the prefix for children.
func newRabbit(t testing.TB, subs ...broker.Subscription) (*rabbit.Broker, string) {
	t.Helper()
	prefix := "faults-" + broker.NewMessageID()[:6]
	b, err := rabbit.New(context.Background(), rabbitConfig(prefix))
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		deleteTopology(b.Plan(subs...))
	})
	for _, s := range subs {
		if err := b.Declare(context.Background(), s); err != nil {
			t.Fatalf("declare %s: %v", s.Topic, err)
		}
	}
	return b, prefix
}

// deleteTopology deletes the queues and exchanges of plan, best effort.
func deleteTopology(plan []rabbit.Declaration) {
	testenv.DeleteTopology(plan, func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
}

// rabbitDeadLetters drains the dead-letter queue of sub and counts its
// messages by id.
func rabbitDeadLetters(t testing.TB, sub broker.Subscription) map[string]int {
	t.Helper()
	return deadLettersAt(t, testenv.RabbitMQ.URL(), sub)
}

// deadLettersAt is rabbitDeadLetters on the broker at url.
func deadLettersAt(t testing.TB, url string, sub broker.Subscription) map[string]int {
	t.Helper()
	conn, ch := amqpChannelAt(t, url)
	defer conn.Close()
	q := rabbit.DLQ(rabbit.Queue(sub.Topic, sub.Group))
	out := map[string]int{}
	for {
		m, ok, err := ch.Get(q, true)
		if err != nil {
			t.Fatalf("dead-letter probe: get %s: %v", q, err)
		}
		if !ok {
			return out
		}
		out[rabbit.EntryFromDelivery(m).MessageID]++
	}
}

// amqpChannel opens a connection and a channel for probes; the caller
// closes the connection.
func amqpChannel(t testing.TB) (*amqp.Connection, *amqp.Channel) {
	t.Helper()
	return amqpChannelAt(t, testenv.RabbitMQ.URL())
}

// amqpChannelAt is amqpChannel on the broker at url.
func amqpChannelAt(t testing.TB, url string) (*amqp.Connection, *amqp.Channel) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("probe: dial RabbitMQ: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		t.Fatalf("probe: channel: %v", err)
	}
	return conn, ch
}

// publishAll publishes one message per id, in batches of 10, retrying a
// batch whose Publish failed until it succeeds (at least once): a fault
// may make a batch fail after some of it was taken. It gives up after two
// minutes. progress, when not nil, is called with the number of messages
// published so far after each batch.
func publishAll(t testing.TB, b broker.Broker, topic string, ids []string, progress func(n int)) {
	t.Helper()
	publishPaced(t, b, topic, ids, 0, progress)
}

// publishPaced is publishAll sending at most one batch every every (0: as
// fast as the broker confirms), so that traffic lasts long enough for a
// fault to hit it in flight. It logs how many Publish calls failed and were
// retried.
func publishPaced(t testing.TB, b broker.Broker, topic string, ids []string, every time.Duration, progress func(n int)) {
	t.Helper()
	var tick <-chan time.Time
	if every > 0 {
		ticker := time.NewTicker(every) // the traffic's rate
		defer ticker.Stop()
		tick = ticker.C
	}
	deadline := time.Now().Add(2 * time.Minute)
	failed := 0
	for start := 0; start < len(ids); start += 10 {
		if tick != nil {
			<-tick
		}
		failed += publishBatch(t, b, topic, ids[start:min(start+10, len(ids))], deadline)
		if progress != nil {
			progress(min(start+10, len(ids)))
		}
	}
	if failed > 0 {
		t.Logf("publisher: %d failed Publish calls retried", failed)
	}
}

// publishBatch publishes one message per id in one Publish call, calling
// again while it fails (at least once: a failed call may have been taken
// in part), and fails t when it still fails after deadline. It returns
// how many calls failed.
func publishBatch(t testing.TB, b broker.Broker, topic string, ids []string, deadline time.Time) (failed int) {
	t.Helper()
	batch := make([]broker.Message, 0, len(ids))
	for _, id := range ids {
		batch = append(batch, broker.Message{ID: id, Value: []byte(id)})
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := b.Publish(ctx, topic, batch...)
		cancel()
		if err == nil {
			return failed
		}
		failed++
		if time.Now().After(deadline) {
			t.Fatalf("publish batch %s..: still failing after the deadline: %v", ids[0], err)
		}
		time.Sleep(min(time.Duration(attempt)*50*time.Millisecond, time.Second)) // back-off between attempts
	}
}

// rabbitmqctl runs rabbitmqctl with args against the node of
// RABBITMQ_URL: the command in RABBITMQCTL (split at spaces, e.g.
// ".ci/rabbitmq4 ctl" for the RabbitMQ 4 node of CI), else rabbitmqctl on
// PATH (the local node).
func rabbitmqctl(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := []string{"rabbitmqctl"}
	if c := strings.Fields(os.Getenv("RABBITMQCTL")); len(c) > 0 {
		cmd = c
	}
	out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %v: %w\n%s", args, err, out)
	}
	return nil
}

// waitAMQP waits until RabbitMQ accepts AMQP connections again.
func waitAMQP(timeout time.Duration) error {
	host := "127.0.0.1:5672"
	if u, err := neturl.Parse(testenv.RabbitMQ.URL()); err == nil && u.Host != "" {
		host = u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "5672")
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		conn, err := amqp.Dial(testenv.RabbitMQ.URL())
		if err == nil {
			_ = conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RabbitMQ (%s) does not accept connections %s after start_app: %w", host, timeout, err)
		}
		time.Sleep(200 * time.Millisecond) // polling a port that has no event to await
	}
}

// rabbitChild is the worker subprocess of the RabbitMQ cases: it consumes
// rabbitSub(FAULTS_TOPIC) under FAULTS_PREFIX until SIGTERM.
func rabbitChild(ctx context.Context) error {
	b, err := rabbit.New(ctx, rabbitConfig(os.Getenv(envPrefix)))
	if err != nil {
		return err
	}
	defer b.Close()
	sub, done := childSub(rabbitSub(os.Getenv(envTopic)))
	defer done()
	return b.Consume(ctx, sub, childHandler)
}

// childHandler is the handler of every worker subprocess: it reports the
// start, does a little work (or kills the process on the poison message,
// FAULTS_POISON), and reports the end.
func childHandler(_ context.Context, d *broker.Delivery) error {
	crashtest.Started(d.ID)
	if p := os.Getenv(envPoison); p != "" && d.ID == p {
		crashtest.Crash()
	}
	time.Sleep(2 * time.Millisecond) // the work
	crashtest.Done(d.ID)
	return nil
}

// childSub returns sub as a child runs it: with FAULTS_POISON, one message
// at a time (a crash then takes no other message with it) and claims
// counted in Redis, max_claims poisonMaxClaims. It returns a cleanup.
func childSub(sub broker.Subscription) (broker.Subscription, func()) {
	if os.Getenv(envPoison) == "" {
		return sub, func() {}
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	return poisonSub(sub, rdb), func() { _ = rdb.Close() }
}

// poisonMaxClaims is the max_claims of the poison-pill case.
const poisonMaxClaims = 3

// poisonSub is sub as the poison-pill case runs it, in parent and child.
func poisonSub(sub broker.Subscription, rdb redis.Cmdable) broker.Subscription {
	sub.Concurrency, sub.Prefetch = 1, 1
	sub.MaxClaims = poisonMaxClaims
	if rdb != nil {
		c, err := claims.New(rdb, claims.Config{})
		if err != nil {
			panic(err) // the zero Config is valid
		}
		sub.Claims = c
	}
	return sub
}

// killedMidBatch runs a child of kind until it handled a quarter of want
// messages, SIGKILLs it, then runs another until want messages are handled
// (or a minute passes), and stops it. It returns the handled counts.
func killedMidBatch(t testing.TB, kind string, env []string, want int) map[string]int {
	t.Helper()
	c := newTally()
	first := startChild(t, c, kind, env...)
	if !c.wait(want/4, time.Minute) {
		t.Fatalf("first worker handled %d of %d messages in a minute", c.distinct(), want)
	}
	first.kill()
	killedAt := c.distinct()
	second := startChild(t, c, kind, env...)
	if !c.wait(want, time.Minute) {
		t.Errorf("after the restart, %d of %d messages handled in a minute", c.distinct(), want)
	}
	second.stop(t)
	t.Logf("SIGKILLed the first worker after %d distinct messages", killedAt)
	return c.counts()
}

// consume runs b.Consume(sub) in this process, counting handled messages
// in c, until the returned stop is called (or t ends); stop fails t when
// Consume returned an error.
func consume(t testing.TB, b broker.Broker, sub broker.Subscription, c *tally) (stop func()) {
	t.Helper()
	return testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		time.Sleep(2 * time.Millisecond) // the work
		c.add(d.ID)
		return nil
	})
}

// closeAll closes every client connection of RabbitMQ, the way an operator
// or a broker failover does. It may run outside the test's goroutine.
func closeAll(t testing.TB, c *tally) {
	t.Helper()
	t.Logf("rabbitmqctl close_all_connections (%d messages handled)", c.distinct())
	if err := rabbitmqctl("close_all_connections", "faults"); err != nil {
		t.Error(err)
	}
	t.Logf("closed (%d messages handled)", c.distinct())
}
