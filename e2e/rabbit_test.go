package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

func rabbitConfig(prefix, mode string) rabbit.Config {
	return rabbit.Config{
		URL:    testenv.RabbitMQ.URL(),
		Prefix: prefix,
		Delay:  rabbit.DelayConfig{Mode: mode, Resolution: 100 * time.Millisecond, Factor: 4, Levels: 4},
		Logger: quietLogger(),
	}
}

// TestRabbitMQ runs the suite and the dead-letter operations suite with
// the default delay mode, hops.
func TestRabbitMQ(t *testing.T) {
	env := rabbitEnv(t, rabbit.DelayHops)
	t.Run("Broker", func(t *testing.T) { Run(t, env) })
	t.Run("DLQ", func(t *testing.T) { RunDLQ(t, env) })
	t.Run("Relay", func(t *testing.T) { RunRelay(t, env) })
}

// TestRabbitMQRouteDelays runs the suite (its retry and delay scenarios
// among them) with route-mode delays: zero consumer hops.
func TestRabbitMQRouteDelays(t *testing.T) {
	Run(t, rabbitEnv(t, rabbit.DelayRoute))
}

// rabbitEnv is the suite's environment on the local RabbitMQ with a prefix
// of its own, built through the configuration entry point; what the tests
// declared is deleted when t ends.
func rabbitEnv(t *testing.T, mode string) Env {
	cfg := rabbitConfig("e2e-"+broker.NewMessageID()[:6], mode)
	probe, err := rabbit.New(t.Context(), cfg)
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() { _ = probe.Close() })
	var mu sync.Mutex
	var declared []broker.Subscription
	t.Cleanup(func() { deleteTopology(t, probe.Plan(declared...)) })
	maxPasses := (cfg.Delay.Factor - 1) * cfg.Delay.Levels
	if mode == rabbit.DelayRoute {
		maxPasses = cfg.Delay.Levels // at most one queue per level
	}
	return Env{
		Name: "rabbitmq",
		New: func(t testing.TB) broker.Broker {
			b := Open(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: %s, delay: {mode: %s, resolution: 100ms, factor: 4, levels: 4}}
`, cfg.URL, cfg.Prefix, mode)).(*rabbit.Broker)
			return &recordingBroker{Broker: b, record: func(subs []broker.Subscription) {
				mu.Lock()
				declared = append(declared, subs...)
				mu.Unlock()
			}}
		},
		DeadLetters: func(ctx context.Context, t testing.TB, topic, group string, want int, quiet time.Duration) []dlq.Entry {
			return rabbitDeadLetters(ctx, t, rabbit.DLQ(rabbit.Queue(topic, group)), want, quiet)
		},
		Resolution: cfg.Delay.Resolution,
		TierPasses: func(d *broker.Delivery) int {
			n := 0
			for _, c := range d.Headers[rabbit.HeaderTierPasses] {
				n = n*10 + int(c-'0')
			}
			return n
		},
		MaxTierPasses: func(time.Duration) int { return maxPasses },
		Router:        rabbit.Router{},
		RawPublish: func(t testing.TB, topic string, key, value []byte, headers map[string][]byte) {
			t.Helper()
			ch := testenv.AMQP(t)
			if err := ch.Confirm(false); err != nil {
				t.Fatal(err)
			}
			table := amqp.Table{}
			for k, v := range headers {
				table[k] = v
			}
			for k, v := range rawTyped {
				table[k] = v
			}
			if key != nil {
				table[driver.HeaderKey] = string(key) // AMQP has no key: redrive's header carries it
			}
			dc, err := ch.PublishWithDeferredConfirmWithContext(t.Context(), rabbit.Names{Prefix: cfg.Prefix}.Topics(), topic, true, false,
				amqp.Publishing{Headers: table, Body: value, DeliveryMode: amqp.Persistent})
			if err != nil {
				t.Fatalf("raw publish: %v", err)
			}
			if ok, err := dc.WaitContext(t.Context()); !ok || err != nil {
				t.Fatalf("raw publish not confirmed: %v %v", ok, err)
			}
		},
		RawTyped: map[string]string{"amqp-int": "42", "amqp-long": "-7000000000", "amqp-bool": "true", "amqp-float": "1.5",
			"amqp-decimal": "12.34", "amqp-time": "2023-11-14T22:13:20.000Z", "amqp-void": ""},
	}
}

// rawTyped are the typed AMQP headers of RawPublish: RawTyped's and two
// without a text form.
var rawTyped = amqp.Table{"amqp-int": int32(42), "amqp-long": int64(-7_000_000_000), "amqp-bool": true, "amqp-float": 1.5,
	"amqp-decimal": amqp.Decimal{Scale: 2, Value: 1234}, "amqp-time": time.Unix(1_700_000_000, 0), "amqp-void": nil,
	"amqp-nested": amqp.Table{"deep": amqp.Table{"deeper": []any{int32(1), "x", amqp.Table{}}}}, "amqp-array": []any{"a", int32(2)}}

// recordingBroker remembers what was declared, so the test can delete it.
type recordingBroker struct {
	*rabbit.Broker
	record func([]broker.Subscription)
}

func (b *recordingBroker) Declare(ctx context.Context, subs ...broker.Subscription) error {
	b.record(subs)
	return b.Broker.Declare(ctx, subs...)
}

// deleteTopology removes the queues and exchanges of a test run.
func deleteTopology(t testing.TB, plan []rabbit.Declaration) {
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for _, d := range plan {
		switch d.Kind {
		case "queue":
			_, err = ch.QueueDelete(d.Name, false, false, false)
		case "exchange":
			err = ch.ExchangeDelete(d.Name, false, false)
		}
		if err != nil {
			t.Logf("cleanup %s %s: %v", d.Kind, d.Name, err)
			return
		}
	}
}

// rabbitDeadLetters consumes a DLQ queue until want entries arrived, then
// for quiet more.
func rabbitDeadLetters(ctx context.Context, t testing.TB, queue string, want int, quiet time.Duration) []dlq.Entry {
	t.Helper()
	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatalf("dial RabbitMQ for DLQ probe: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open DLQ probe channel: %v", err)
	}
	msgs, err := ch.Consume(queue, "", true, true, false, false, nil)
	if err != nil {
		t.Fatalf("consume %s: %v", queue, err)
	}
	var out []dlq.Entry
	deadline := time.After(60 * time.Second)
	for len(out) < want {
		select {
		case m := <-msgs:
			out = append(out, rabbit.EntryFromDelivery(m))
		case <-deadline:
			t.Fatalf("DLQ %s: got %d dead letters, want %d", queue, len(out), want)
		case <-ctx.Done():
			t.Fatalf("DLQ %s: %v", queue, ctx.Err())
		}
	}
	q := time.After(quiet)
	for {
		select {
		case m := <-msgs:
			out = append(out, rabbit.EntryFromDelivery(m))
		case <-q:
			return out
		}
	}
}
