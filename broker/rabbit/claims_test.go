package rabbit_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/claims"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/crashtest"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

const poisonMaxClaims = 3

// poisonSub is the subscription of the poison-pill tests, in parent and
// child alike. Quorum queues count on the broker: no Redis counter.
func poisonSub(topic string, rdb redis.Cmdable) broker.Subscription {
	s := broker.Subscription{
		Topic: topic, Group: "g",
		Policy:          retrypolicy.Policy{MaxRetries: 2},
		ShutdownTimeout: 5 * time.Second,
		MaxClaims:       poisonMaxClaims,
	}
	if rdb != nil {
		c, err := claims.New(rdb, claims.Config{})
		if err != nil {
			panic(err) // the zero Config is valid
		}
		s.Claims = c
	} else {
		// x-delivery-count counts prefetched messages too: prefetch no
		// more than the handlers take, for exact counts.
		s.Prefetch = 1
	}
	return s
}

// TestPoisonPillIsDeadLettered runs a worker in a child process whose
// handler kills the process on one message, restarting it each time: the
// message is dead-lettered with reason max_claims after exactly max_claims
// handler starts, and every other message is handled. Classic queues count
// claims in Redis, quorum queues with x-delivery-count.
func TestPoisonPillIsDeadLettered(t *testing.T) {
	if crashtest.IsChild() {
		poisonChild(t)
		return
	}
	for _, qt := range []string{rabbit.Classic, rabbit.Quorum} {
		t.Run(qt, func(t *testing.T) { testPoisonPill(t, qt) })
	}
}

func testPoisonPill(t *testing.T, queueType string) {
	var rdb *redis.Client
	if queueType == rabbit.Classic {
		rdb = redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
		t.Cleanup(func() { _ = rdb.Close() })
		if err := rdb.Ping(t.Context()).Err(); err != nil {
			testenv.Redis.Fail(t, err)
		}
	}
	topic := "poison." + broker.NewMessageID()[:6]
	sub := poisonSub(topic, rdb)
	var prefix string
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType = queueType; prefix = c.Prefix }, sub)
	if err := b.Declare(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	const poison = "m2"
	var ids, others []string
	var msgs []broker.Message
	for i := range 6 {
		id := fmt.Sprintf("m%d", i)
		ids = append(ids, id)
		msgs = append(msgs, broker.Message{ID: id, Value: []byte(id)})
		if id != poison {
			others = append(others, id)
		}
	}
	if err := b.Publish(t.Context(), topic, msgs...); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(t.Context())
	sv, finished := crashtest.Supervise(ctx, t, "TestPoisonPillIsDeadLettered",
		"POISON_PREFIX="+prefix, "POISON_TOPIC="+topic, "POISON_QUEUE_TYPE="+queueType,
		"POISON_ID="+poison, "REDIS_ADDR="+testenv.Redis.URL())
	defer func() { stop(); <-finished }()

	dl := get(t, channel(t), rabbit.DLQ(rabbit.Queue(topic, sub.Group)))
	sv.WaitDone(time.Minute, others...)
	stop()
	<-finished
	if err := sv.Err(); err != nil {
		t.Fatal(err)
	}

	if dl.MessageId != poison || dl.Headers[broker.HeaderReason] != string(driver.ReasonMaxClaims) {
		t.Errorf("dead letter = id %q reason %v, want %q %q", dl.MessageId, dl.Headers[broker.HeaderReason], poison, driver.ReasonMaxClaims)
	}
	if n := depth(t, channel(t), rabbit.DLQ(rabbit.Queue(topic, sub.Group))); n != 0 {
		t.Errorf("%d more dead letters, want none", n)
	}
	starts, done := sv.Starts(), sv.Done()
	if starts[poison] != poisonMaxClaims {
		t.Errorf("poison handler started %d times, want max_claims = %d", starts[poison], poisonMaxClaims)
	}
	if done[poison] != 0 {
		t.Errorf("poison handler returned %d times, want 0", done[poison])
	}
	if got := len(done) + 1; got != len(ids) {
		t.Errorf("handled %d distinct + 1 dead-lettered = %d, want published %d", len(done), got, len(ids))
	}
	if rdb != nil {
		if n, err := rdb.Exists(t.Context(), driver.ClaimKey(sub.Group, poison, "1")).Result(); err != nil || n != 0 {
			t.Errorf("claim key of the dead-lettered message: exists %d, %v; want released", n, err)
		}
	}
}

// poisonChild is the worker of TestPoisonPillIsDeadLettered's children.
func poisonChild(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var rdb *redis.Client
	if os.Getenv("POISON_QUEUE_TYPE") == rabbit.Classic {
		rdb = redis.NewClient(&redis.Options{Addr: testenv.Redis.URL()})
		defer rdb.Close()
	}
	b, err := rabbit.New(ctx, rabbit.Config{
		URL: testenv.RabbitMQ.URL(), Prefix: os.Getenv("POISON_PREFIX"), QueueType: os.Getenv("POISON_QUEUE_TYPE"),
		Delay: rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3},
	})
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	defer b.Close()
	poison := os.Getenv("POISON_ID")
	var sub broker.Subscription
	if rdb != nil {
		sub = poisonSub(os.Getenv("POISON_TOPIC"), rdb)
	} else {
		sub = poisonSub(os.Getenv("POISON_TOPIC"), nil)
	}
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

// On a quorum queue max_claims is also the broker's x-delivery-limit: a
// message that a foreign consumer keeps handing back (nack, requeue) is
// dead-lettered by RabbitMQ itself, and the keeper reads the reason as
// delivery_limit, its own.
func TestQuorumDeliveryLimitBacksMaxClaims(t *testing.T) {
	s := sub("dlimit." + broker.NewMessageID()[:6])
	s.MaxClaims = 2
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType = rabbit.Quorum }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: "loop", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	q := rabbit.Queue(s.Topic, s.Group)
	msgs, err := channel(t).Consume(q, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := channel(t).Consume(rabbit.DLQ(q), "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliveries := 0
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-msgs:
			deliveries++
			_ = m.Nack(false, true)
		case d := <-dead:
			if want := s.MaxClaims + 1; deliveries != want {
				t.Errorf("delivered %d times before the broker dead-lettered it, want max_claims + 1 = %d", deliveries, want)
			}
			e := rabbit.EntryFromDelivery(d)
			if e.MessageID != "loop" || e.Reason != string(driver.ReasonDeliveryLimit) || e.Source != q {
				t.Errorf("dead letter = id %q reason %q source %q, want loop / %s / %s", e.MessageID, e.Reason, e.Source, driver.ReasonDeliveryLimit, q)
			}
			return
		case <-deadline:
			t.Fatalf("not dead-lettered after %d deliveries", deliveries)
		}
	}
}
