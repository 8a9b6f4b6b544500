package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/retrypolicy"
)

// rabbitEnv is one run's RabbitMQ set-up: a redrive broker with its own
// prefix, and the names declared for the raw client, deleted at the end.
type rabbitEnv struct {
	base
	peers  *peerRunner // nil without Config.Peers
	rcfg   rabbit.Config
	prefix string
	b      *rabbit.Broker
	subs   []broker.Subscription
	queues []string // raw client's queues
	exch   []string // raw client's exchanges
}

// benchPolicy retries at once, up to three times.
var benchPolicy = retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{0}}}

func runRabbit(ctx context.Context, cfg Config, prefix string, peers *peerRunner) (rows []Row, err error) {
	e := &rabbitEnv{base: base{cfg: cfg, broker: RabbitMQ}, prefix: prefix, peers: peers}
	e.rcfg = rabbit.Config{
		URL:    cfg.RabbitURL,
		Prefix: prefix,
		Delay:  rabbit.DelayConfig{Mode: cfg.DelayMode, Resolution: cfg.Resolution, Factor: cfg.DelayFactor, Levels: cfg.DelayLevels},
		Logger: cfg.Logger,

		QueueType:      cfg.QueueType,
		DelayQueueType: cfg.DelayQueueType,
		KeeperBatch:    cfg.KeeperBatch,
	}
	e.b, err = rabbit.New(ctx, e.rcfg)
	if err != nil {
		return nil, err
	}
	e.redrive = e.b
	defer func() {
		_ = e.b.Close()
		if cerr := e.cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	steps := []step{
		{ScenarioPublish, e.publish},
		{ScenarioConsume, e.consume},
		{ScenarioRetry, func(ctx context.Context) ([]Row, error) {
			raw, err := e.rawRetry(ctx)
			if err != nil {
				return nil, err
			}
			rs, err := failing(ctx, e, failRetry, rabbitNotes, rows)
			for i := range rs {
				gradeIdeal(&rs[i], rows, retryFraction)
				besideRaw(&rs[i], raw, rows, retryFraction)
			}
			return append([]Row{raw}, rs...), err
		}},
		{ScenarioDLQ, func(ctx context.Context) ([]Row, error) { return failing(ctx, e, failDLQ, rabbitNotes, rows) }},
		{ScenarioDelay, e.delay},
		{ScenarioReplay, e.replay},
		{ScenarioKeeper, func(ctx context.Context) ([]Row, error) { return keeperScenario(ctx, e, rabbit.Name) }},
		{ScenarioRelay, func(ctx context.Context) ([]Row, error) { return relayScenario(ctx, e) }},
		{ScenarioEffects, func(ctx context.Context) ([]Row, error) { return effectsScenario(ctx, e) }},
	}
	var peer func(context.Context, string) ([]Row, error)
	if peers != nil {
		peer = func(ctx context.Context, scenario string) ([]Row, error) {
			ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			defer cancel()
			r, err := e.peer(ctx, scenario)
			if err != nil {
				return nil, err
			}
			return []Row{r}, nil
		}
	}
	err = e.runSteps(ctx, steps, &rows, peer)
	return rows, err
}

// rabbitNotes say what the handler of the retry and dlq scenarios does.
var rabbitNotes = map[string]string{
	failRetry: "10 % fail once, retried at once",
	failDLQ:   "1 % permanent → DLQ",
}

// sub declares and remembers a subscription for cleanup.
func (e *rabbitEnv) sub(ctx context.Context, name string) (broker.Subscription, error) {
	s := broker.Subscription{
		Topic:           e.prefix + "." + name,
		Group:           name,
		Policy:          benchPolicy,
		Concurrency:     e.cfg.Concurrency,
		Prefetch:        8 * e.cfg.Concurrency,
		ShutdownTimeout: 5 * time.Second,
	}
	e.subs = append(e.subs, s)
	return s, e.b.Declare(ctx, s)
}

// dial opens a raw connection and channel.
func (e *rabbitEnv) dial() (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.Dial(e.cfg.RabbitURL)
	if err != nil {
		return nil, nil, fmt.Errorf("raw: connect to %s: %w", rabbit.MaskURL(e.cfg.RabbitURL), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("raw: open channel: %w", err)
	}
	return conn, ch, nil
}

// rawQueue declares a durable queue of redrive's queue type bound to a raw
// topic exchange with key, as redrive's group queues are.
func (e *rabbitEnv) rawQueue(name, key string) (exchange, queue string, err error) {
	exchange, queue = e.prefix+".raw", e.prefix+".raw."+name
	return exchange, queue, e.declare(exchange, queue, key)
}

// declare declares a durable topic exchange and a durable queue of
// redrive's queue type bound to it with key, and remembers both for
// cleanup.
func (e *rabbitEnv) declare(exchange, queue, key string) error {
	conn, ch, err := e.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	if !slices.Contains(e.exch, exchange) {
		e.exch = append(e.exch, exchange)
	}
	e.queues = append(e.queues, queue)
	if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", exchange, err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-queue-type": e.cfg.QueueType}); err != nil {
		return fmt.Errorf("declare queue %s: %w", queue, err)
	}
	if err := ch.QueueBind(queue, key, exchange, false, nil); err != nil {
		return fmt.Errorf("bind queue %s: %w", queue, err)
	}
	return nil
}

// purge empties queue.
func (e *rabbitEnv) purge(queue string) error {
	conn, ch, err := e.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := ch.QueuePurge(queue, false); err != nil {
		return fmt.Errorf("purge %s: %w", queue, err)
	}
	return nil
}

// cleanup deletes every queue and exchange of the run.
func (e *rabbitEnv) cleanup() error {
	plan, err := rabbit.Plan(e.rcfg, e.subs...)
	if err != nil {
		return err
	}
	queues, exch := append([]string(nil), e.queues...), append([]string(nil), e.exch...)
	for _, d := range plan {
		switch d.Kind {
		case "queue":
			queues = append(queues, d.Name)
		case "exchange":
			exch = append(exch, d.Name)
		}
	}
	conn, ch, err := e.dial()
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	defer conn.Close()
	var first error
	del := func(kind, name string, f func(*amqp.Channel) error) {
		if err := f(ch); err != nil {
			if first == nil {
				first = fmt.Errorf("cleanup: delete %s %s: %w", kind, name, err)
			}
			if ch, err = conn.Channel(); err != nil {
				return
			}
		}
	}
	for _, q := range queues {
		del("queue", q, func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	}
	for _, x := range exch {
		del("exchange", x, func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	}
	return first
}

// rawRelay drains n pre-filled messages of a raw queue through a raw
// channel (Concurrency goroutines), each POSTed by post before its ack.
func (e *rabbitEnv) rawRelay(ctx context.Context, name string, n int, post func(relayMsg) error) (Row, error) {
	exchange, queue, err := e.rawQueue(name, name)
	if err != nil {
		return Row{}, err
	}
	if err := e.rawFill(ctx, exchange, name, n); err != nil {
		return Row{}, err
	}
	return e.rawDrain(ctx, ScenarioRelay, queue, n, func(d amqp.Delivery) error {
		seq, _ := d.Headers[headerSeq].(string)
		return post(relayMsg{id: d.MessageId, topic: name, seq: seq, at: d.Timestamp, body: d.Body})
	})
}

// dlqOf names the dead-letter queue of s's group queue.
func (e *rabbitEnv) dlqOf(s broker.Subscription) string {
	return rabbit.DLQ(rabbit.Queue(s.Topic, s.Group))
}

// rawDrainDLQ drains n dead letters of queue through the raw client.
func (e *rabbitEnv) rawDrainDLQ(ctx context.Context, queue string, n int) (Row, error) {
	return e.rawDrain(ctx, ScenarioKeeper, queue, n, nil)
}

// keeperSource is the redrive broker: its ConsumeDeadLetterBatches.
func (e *rabbitEnv) keeperSource() dlq.Source { return e.b }

// held is queue's count of ready messages (count).
func (e *rabbitEnv) held(_ context.Context, queue string) (int64, error) { return e.count(queue) }

// left is what queue still holds: its ready messages once the keeper's
// connection is closed (the unacked ones are ready again).
func (e *rabbitEnv) left(ctx context.Context, queue string) (int64, error) { return e.held(ctx, queue) }
