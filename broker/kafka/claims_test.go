package kafka_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/internal/testsupport/crashtest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// poisonSub is the subscription of the poison-pill test, in parent and
// child alike.
func poisonSub(topic, group string, rdb redis.Cmdable, maxClaims int) broker.Subscription {
	c, err := claims.New(rdb, claims.Config{})
	if err != nil {
		panic(err) // the zero Config is valid
	}
	return broker.Subscription{
		Topic: topic, Group: group,
		Policy:          retrypolicy.Policy{MaxRetries: 2},
		ShutdownTimeout: 5 * time.Second,
		MaxClaims:       maxClaims,
		Claims:          c,
	}
}

const poisonMaxClaims = 3

// TestPoisonPillIsDeadLettered runs a worker in a child process whose
// handler kills the process on one message, restarting it each time: the
// message is dead-lettered with reason max_claims after exactly max_claims
// handler starts, and every other message is handled.
func TestPoisonPillIsDeadLettered(t *testing.T) {
	if crashtest.IsChild() {
		poisonChild(t)
		return
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		testenv.Redis.Fail(t, err)
	}
	// Members of crashed children leave the group after a short session.
	_, brokers := kafkatest.Fake(t, kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "100"}))
	topic, group := topicName(t), "poison-"+broker.NewMessageID()[:6]
	b := kafkatest.New(t, brokers, nil)
	sub := poisonSub(topic, group, rdb, poisonMaxClaims)
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const poison = "m2"
	var ids, others []string
	for i := range 6 {
		id := fmt.Sprintf("m%d", i)
		ids = append(ids, id)
		if id != poison {
			others = append(others, id)
		}
	}
	var msgs []broker.Message
	for _, id := range ids {
		msgs = append(msgs, msg(id, "one-key")) // one partition, in order
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(t.Context())
	sv, finished := crashtest.Supervise(ctx, t, "TestPoisonPillIsDeadLettered",
		"POISON_BROKERS="+strings.Join(brokers, ","), "POISON_TOPIC="+topic, "POISON_GROUP="+group,
		"POISON_ID="+poison, "REDIS_ADDR="+testenv.Redis.URL())
	defer func() { stop(); <-finished }()

	dls := kafkatest.DeadLetters(t.Context(), t, brokers, topic, group, 1, 300*time.Millisecond)
	sv.WaitDone(time.Minute, others...)
	stop()
	<-finished
	if err := sv.Err(); err != nil {
		t.Fatal(err)
	}

	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	e := dls[0].Entry
	if e.MessageID != poison || e.Reason != string(driver.ReasonMaxClaims) || e.ErrorClass != driver.ClassMaxClaims {
		t.Errorf("dead letter = id %q reason %q class %q, want %q %q %q", e.MessageID, e.Reason, e.ErrorClass, poison, driver.ReasonMaxClaims, driver.ClassMaxClaims)
	}
	starts, done := sv.Starts(), sv.Done()
	if starts[poison] != poisonMaxClaims {
		t.Errorf("poison handler started %d times, want max_claims = %d", starts[poison], poisonMaxClaims)
	}
	if done[poison] != 0 {
		t.Errorf("poison handler returned %d times, want 0", done[poison])
	}
	if got := len(done) + len(dls); got != len(ids) {
		t.Errorf("handled %d distinct + dead-lettered %d = %d, want published %d", len(done), len(dls), got, len(ids))
	}
	if runs := sv.Runs(); runs != poisonMaxClaims+1 {
		t.Errorf("%d child runs, want %d (one crash per claim, then the one that dead-letters)", runs, poisonMaxClaims+1)
	}
	if n, err := rdb.Exists(t.Context(), driver.ClaimKey(group, topic, "0", "2")).Result(); err == nil && n != 0 {
		t.Errorf("claim key of the dead-lettered message is still in Redis")
	}
}

// poisonChild is the worker of TestPoisonPillIsDeadLettered's children.
func poisonChild(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
	defer rdb.Close()
	brokers := strings.Split(os.Getenv("POISON_BROKERS"), ",")
	cfg := kafkatest.Config(brokers)
	cfg.SessionTimeout, cfg.RebalanceTimeout = 500*time.Millisecond, 2*time.Second
	b, err := kafka.New(ctx, cfg)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	defer b.Close()
	poison := os.Getenv("POISON_ID")
	sub := poisonSub(os.Getenv("POISON_TOPIC"), os.Getenv("POISON_GROUP"), rdb, poisonMaxClaims)
	err = b.Consume(ctx, sub, func(_ context.Context, d *broker.Delivery) error {
		crashtest.Started(d.ID)
		if d.ID == poison {
			crashtest.Crash()
		}
		crashtest.Done(d.ID)
		return nil
	})
	if err != nil {
		t.Fatalf("child: consume: %v", err)
	}
}
