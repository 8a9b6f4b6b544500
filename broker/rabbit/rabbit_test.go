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
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// newBroker connects with a prefix of its own and removes its topology
// when the test ends. RabbitMQ is required: unreachable fails the test.
func newBroker(t *testing.T, mod func(*rabbit.Config), subs ...broker.Subscription) *rabbit.Broker {
	t.Helper()
	cfg := rabbit.Config{
		URL:    testenv.RabbitMQ.URL(),
		Prefix: "rt-" + broker.NewMessageID()[:6],
		Delay:  rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 3},
		Logger: slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&cfg)
	}
	b, err := rabbit.New(t.Context(), cfg)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		cleanup(t, b.Plan(subs...))
	})
	return b
}

func channel(t *testing.T) *amqp.Channel { return testenv.AMQP(t) }

func cleanup(t *testing.T, plan []rabbit.Declaration) {
	testenv.DeleteTopology(plan, func(d rabbit.Declaration) (string, string) { return d.Kind, d.Name })
}

// get reads one message from queue, waiting up to 10 s.
func get(t *testing.T, ch *amqp.Channel, queue string) amqp.Delivery {
	t.Helper()
	return getN(t, ch, queue, 1)[0]
}

// getN reads n messages from queue with one consumer, waiting up to 10 s.
func getN(t *testing.T, ch *amqp.Channel, queue string, n int) []amqp.Delivery {
	t.Helper()
	tag := broker.NewMessageID()
	msgs, err := ch.Consume(queue, tag, false, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume %s: %v", queue, err)
	}
	defer ch.Cancel(tag, false)
	var out []amqp.Delivery
	for len(out) < n {
		select {
		case m := <-msgs:
			_ = m.Ack(false)
			out = append(out, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d messages on %s", len(out), n, queue)
		}
	}
	return out
}

func depth(t *testing.T, ch *amqp.Channel, queue string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

func sub(topic string) broker.Subscription {
	return broker.Subscription{Topic: topic, Group: "g", ShutdownTimeout: 5 * time.Second}
}

func TestDeclareIsIdempotent(t *testing.T) {
	s := sub("idem." + broker.NewMessageID()[:6])
	b := newBroker(t, nil, s)
	for range 2 {
		if err := b.Declare(t.Context(), s); err != nil {
			t.Fatalf("Declare: %v", err)
		}
	}
}

func TestDeclareConflictExplains(t *testing.T) {
	s := sub("clash." + broker.NewMessageID()[:6])
	s.MaxAge = 5 * time.Second
	b := newBroker(t, nil, s)
	ch := channel(t)
	q := rabbit.Queue(s.Topic, s.Group)
	if _, err := ch.QueueDeclare(q, true, false, false, false, amqp.Table{"x-message-ttl": int64(1000)}); err != nil {
		t.Fatal(err)
	}
	err := b.Declare(t.Context(), s)
	if !errors.Is(err, rabbit.ErrTopologyConflict) {
		t.Fatalf("Declare = %v, want ErrTopologyConflict", err)
	}
	msg := err.Error()
	for _, want := range []string{q, "x-message-ttl", "1000", "5000", "delete"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	// Consume gives up with the same error instead of reconnecting forever.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := b.Consume(ctx, s, func(context.Context, *broker.Delivery) error { return nil }); !errors.Is(err, rabbit.ErrTopologyConflict) {
		t.Fatalf("Consume = %v, want ErrTopologyConflict", err)
	}
}

func TestPublishUnroutable(t *testing.T) {
	b := newBroker(t, nil)
	err := b.Publish(t.Context(), "nobody.listens."+broker.NewMessageID()[:6], broker.Message{Value: []byte("x")})
	if !errors.Is(err, broker.ErrUnroutable) {
		t.Fatalf("Publish to a topic without queues = %v, want ErrUnroutable", err)
	}
}

func TestUnroutableRetryIsParked(t *testing.T) {
	b := newBroker(t, nil)
	ch := channel(t)
	n := b.Names()
	if err := ch.Publish(n.Retry(), "queue.that.is.gone", false, false, amqp.Publishing{Body: []byte("parked"), MessageId: "p1"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish(n.DLX(), "queue.that.is.gone", false, false, amqp.Publishing{Body: []byte("parked too"), MessageId: "p2"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range getN(t, ch, n.Unroutable(), 2) {
		got[m.MessageId] = string(m.Body)
	}
	if got["p1"] != "parked" || got["p2"] != "parked too" {
		t.Fatalf("unroutable queue holds %v, want both messages", got)
	}
}

func TestPublishTooLargeSendsNothing(t *testing.T) {
	s := sub("large." + broker.NewMessageID()[:6])
	b := newBroker(t, func(c *rabbit.Config) { c.MaxMessageSize = 1024 }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	err := b.Publish(t.Context(), s.Topic, broker.Message{Value: []byte("small")}, broker.Message{Value: make([]byte, 2048)})
	if !errors.Is(err, broker.ErrTooLarge) {
		t.Fatalf("Publish = %v, want ErrTooLarge", err)
	}
	if n := depth(t, channel(t), rabbit.Queue(s.Topic, s.Group)); n != 0 {
		t.Fatalf("queue holds %d messages after a refused batch, want 0 (nothing half-sent)", n)
	}
}

func TestUnreachableNamesURLWithoutPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := rabbit.New(ctx, rabbit.Config{URL: "amqp://guest:s3cr3t@127.0.0.1:1/", DialTimeout: time.Second})
	if err == nil {
		t.Fatal("New against a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error %q: want the URL with its password masked", err)
	}
}

func TestHandlerPanicIsAFailure(t *testing.T) {
	s := sub("panic." + broker.NewMessageID()[:6])
	s.Policy = retrypolicy.Policy{MaxRetries: 1}
	b := newBroker(t, func(c *rabbit.Config) { c.InstanceID = "pod-7" }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	calls := make(chan int, 10)
	go func() {
		done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error {
			calls <- d.Attempt
			panic("handler bug")
		})
	}()
	if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: "boom", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	m := get(t, channel(t), rabbit.DLQ(rabbit.Queue(s.Topic, s.Group)))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	e := rabbit.EntryFromDelivery(m)
	if e.ErrorClass != "panic" || !strings.Contains(e.ErrorMessage, "handler bug") || e.RetryCount != 1 {
		t.Fatalf("entry = class %q message %q retries %d, want panic / handler bug / 1", e.ErrorClass, e.ErrorMessage, e.RetryCount)
	}
	if e.Worker != s.Group || e.WorkerInstance != "pod-7" {
		t.Errorf("entry worker %q instance %q, want %q and the configured instance pod-7", e.Worker, e.WorkerInstance, s.Group)
	}
	if len(calls) != 2 {
		t.Fatalf("handler called %d times, want 2", len(calls))
	}
}

func TestQuorumQueuesRetryAndDeadLetter(t *testing.T) {
	s := sub("quorum." + broker.NewMessageID()[:6])
	s.Policy = retrypolicy.Policy{MaxRetries: 2, Backoff: retrypolicy.Schedule{Delays: []time.Duration{100 * time.Millisecond}}}
	b := newBroker(t, func(c *rabbit.Config) { c.QueueType = rabbit.Quorum }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatalf("Declare quorum: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	attempts := make(chan int, 10)
	go func() {
		done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error {
			attempts <- d.Attempt
			return errors.New("nope")
		})
	}()
	if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: "q1", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	m := get(t, channel(t), rabbit.DLQ(rabbit.Queue(s.Topic, s.Group)))
	cancel()
	<-done
	if e := rabbit.EntryFromDelivery(m); e.Reason != string(driver.ReasonMaxRetries) || e.RetryCount != 2 {
		t.Fatalf("entry reason %q retries %d, want max_retries / 2", e.Reason, e.RetryCount)
	}
	if len(attempts) != 3 {
		t.Fatalf("handler calls = %d, want 3", len(attempts))
	}
}

func TestMaxLengthDeadLetters(t *testing.T) {
	s := sub("maxlen." + broker.NewMessageID()[:6])
	b := newBroker(t, func(c *rabbit.Config) { c.MaxLength = 2 }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: string(rune('a' + i)), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	m := get(t, channel(t), rabbit.DLQ(rabbit.Queue(s.Topic, s.Group)))
	e := rabbit.EntryFromDelivery(m)
	if e.Reason != string(driver.ReasonMaxLength) || e.MessageID != "a" {
		t.Fatalf("overflow entry = %q reason %q, want the oldest message (a) with reason max_length", e.MessageID, e.Reason)
	}
	if e.Worker != s.Group {
		t.Errorf("broker-made dead letter: worker %q, want %q (from the group queue's name)", e.Worker, s.Group)
	}
}

// planText renders a plan as topology apply --dry-run prints it.
func planText(plan []rabbit.Declaration) string {
	lines := make([]string, len(plan))
	for i, d := range plan {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Quorum queues that dead-letter do it at least once (reject-publish), a
// group queue's max_claims is its delivery limit, and the delay queues
// take their own type.
func TestQuorumPlan(t *testing.T) {
	s := sub("plan.topic")
	s.MaxClaims = 4
	plan, err := rabbit.Plan(rabbit.Config{Prefix: "p", QueueType: rabbit.Quorum, DelayQueueType: rabbit.Classic,
		Delay: rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 1}}, s)
	if err != nil {
		t.Fatal(err)
	}
	all := planText(plan)
	for _, want := range []string{
		"queue    plan.topic.g {x-dead-letter-exchange=p.dlx, x-dead-letter-routing-key=plan.topic.g, x-dead-letter-strategy=at-least-once, x-delivery-limit=4, x-overflow=reject-publish, x-queue-type=quorum}",
		"queue    plan.topic.g.dlq {x-delivery-limit=-1, x-queue-type=quorum}",
		"queue    p.unroutable {x-delivery-limit=-1, x-queue-type=quorum}",
		"queue    p.route.0.1 {x-dead-letter-exchange=p.route.final, x-message-ttl=100, x-queue-type=classic}",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("plan lacks %q:\n%s", want, all)
		}
	}
	plan, _ = rabbit.Plan(rabbit.Config{Prefix: "p", QueueType: rabbit.Quorum,
		Delay: rabbit.DelayConfig{Resolution: 100 * time.Millisecond, Factor: 2, Levels: 1}}, sub("plan.topic"))
	for _, d := range plan {
		if d.Kind != "queue" {
			continue
		}
		if d.Name == "p.route.0.1" && (d.Args["x-queue-type"] != rabbit.Quorum || d.Args["x-dead-letter-strategy"] != "at-least-once") {
			t.Errorf("delay queue %s without a delay queue type: %v, want quorum at least once (the queue type)", d.Name, d.Args)
		}
		if d.Name == "plan.topic.g" && d.Args["x-delivery-limit"] != int64(rabbit.DefaultDeliveryLimit) {
			t.Errorf("group queue without max_claims: %v, want x-delivery-limit=%d (rabbitmq.delivery_limit's default)", d.Args, rabbit.DefaultDeliveryLimit)
		}
		if d.Name == "p.route.0.1" && d.Args["x-delivery-limit"] != int64(rabbit.NoDeliveryLimit) {
			t.Errorf("quorum delay queue %s: %v, want x-delivery-limit=-1 (nothing catches what it would drop)", d.Name, d.Args)
		}
	}
}

// In route mode a delayed message whose target queue is gone is parked in
// the unroutable queue once its delay is over, never dropped.
func TestRouteUnroutableIsParked(t *testing.T) {
	b := newBroker(t, func(c *rabbit.Config) { c.Delay.Mode = rabbit.DelayRoute })
	ch := channel(t)
	n := b.Names()
	if err := ch.Publish(n.RouteLevel(0), "1.1.0.queue.that.is.gone", false, false,
		amqp.Publishing{Body: []byte("late and lost"), MessageId: "r1"}); err != nil {
		t.Fatal(err)
	}
	m := get(t, ch, n.Unroutable())
	if m.MessageId != "r1" || string(m.Body) != "late and lost" {
		t.Fatalf("unroutable queue holds %q %q", m.MessageId, m.Body)
	}
}

// Route mode's plan: one queue per non-zero digit per level, the digit-0
// exchange bindings, and each group queue bound to the final exchange for
// its own name (retries) and its topic (PublishDelayed).
func TestRoutePlan(t *testing.T) {
	s := sub("plan.topic")
	plan, err := rabbit.Plan(rabbit.Config{Prefix: "p", Delay: rabbit.DelayConfig{Mode: rabbit.DelayRoute,
		Resolution: 100 * time.Millisecond, Factor: 3, Levels: 2}}, s)
	if err != nil {
		t.Fatal(err)
	}
	all := planText(plan)
	for _, want := range []string{
		"queue    p.route.0.1 {x-dead-letter-exchange=p.route.1, x-message-ttl=100, x-queue-type=classic}",
		"queue    p.route.0.2 {x-dead-letter-exchange=p.route.1, x-message-ttl=200, x-queue-type=classic}",
		"queue    p.route.1.2 {x-dead-letter-exchange=p.route.final, x-message-ttl=600, x-queue-type=classic}",
		`binding  p.route.0 -> exchange p.route.1 key "0.#"`,
		`binding  p.route.1 -> exchange p.route.final key "*.0.#"`,
		`binding  p.route.final -> plan.topic.g key "*.*.plan.topic.g"`,
		`binding  p.route.final -> plan.topic.g key "*.*.@.plan.topic"`,
		`binding  p.route.topics -> exchange p.route.0 key "*.*.@.plan.topic"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("plan lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "p.delay.") {
		t.Errorf("route mode declares hop tiers:\n%s", all)
	}
}
