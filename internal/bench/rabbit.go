package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/retrypolicy"
)

// rabbitEnv is one run's RabbitMQ set-up: a redrive broker with its own
// prefix, and the names declared for the raw client, deleted at the end.
type rabbitEnv struct {
	cfg    Config
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
	e := &rabbitEnv{cfg: cfg, prefix: prefix, peers: peers}
	e.rcfg = rabbit.Config{
		URL:    cfg.RabbitURL,
		Prefix: prefix,
		Delay:  rabbit.DelayConfig{Mode: cfg.DelayMode, Resolution: cfg.Resolution, Factor: 4, Levels: 5},
		Logger: cfg.Logger,

		QueueType:      cfg.QueueType,
		DelayQueueType: cfg.DelayQueueType,
	}
	e.b, err = rabbit.New(ctx, e.rcfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = e.b.Close()
		if cerr := e.cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	steps := []struct {
		scenario string
		run      func(context.Context) ([]Row, error)
	}{
		{ScenarioPublish, e.publish},
		{ScenarioConsume, e.consume},
		{ScenarioRetry, func(ctx context.Context) ([]Row, error) { return e.failing(ctx, failRetry, rows) }},
		{ScenarioDLQ, func(ctx context.Context) ([]Row, error) { return e.failing(ctx, failDLQ, rows) }},
		{ScenarioDelay, e.delay},
		{ScenarioReplay, e.replay},
	}
	for _, s := range steps {
		if !cfg.runs(s.scenario) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		rs, err := s.run(sctx)
		cancel()
		rows = append(rows, rs...)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", s.scenario, err)
		}
		if peers != nil && runsPeers(s.scenario) {
			sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			r, err := e.peer(sctx, s.scenario)
			cancel()
			if err != nil {
				return rows, fmt.Errorf("%s: %w", s.scenario, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func (e *rabbitEnv) progress(scenario, client string) {
	if e.cfg.Progress != nil {
		e.cfg.Progress(scenario, RabbitMQ, client)
	}
	e.cfg.Logger.Info("bench: measuring", "scenario", scenario, "broker", RabbitMQ, "client", client)
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

// publish: redrive Publish in batches vs raw pipelined deferred confirms
// with the same batch size, both mandatory and persistent.
func (e *rabbitEnv) publish(ctx context.Context) ([]Row, error) {
	n, body := e.cfg.Messages, body(e.cfg.Size)
	batches := messages(n, e.cfg.Batch, body)

	// raw
	e.progress(ScenarioPublish, ClientRaw)
	exchange, queue, err := e.rawQueue("publish", "publish")
	if err != nil {
		return nil, err
	}
	conn, ch, err := e.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("raw: confirm mode: %w", err)
	}
	lat := make([]time.Duration, 0, len(batches))
	confs := make([]*amqp.DeferredConfirmation, 0, e.cfg.Batch)
	m := startMeter()
	for _, batch := range batches {
		t0 := time.Now()
		confs = confs[:0]
		for _, msg := range batch {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, "publish", true, false, amqp.Publishing{
				Headers:      amqp.Table{headerSeq: msg.Headers[headerSeq]},
				DeliveryMode: amqp.Persistent,
				MessageId:    broker.NewMessageID(),
				Timestamp:    time.Now(),
				Body:         msg.Value,
			})
			if err != nil {
				return nil, fmt.Errorf("raw: publish: %w", err)
			}
			confs = append(confs, dc)
		}
		for _, dc := range confs {
			ok, err := dc.WaitContext(ctx)
			if err != nil {
				return nil, fmt.Errorf("raw: await confirm: %w", err)
			}
			if !ok {
				return nil, fmt.Errorf("raw: broker refused (nack) a message")
			}
		}
		lat = append(lat, time.Since(t0))
	}
	el, u := m.stop()
	raw := row(ScenarioPublish, RabbitMQ, ClientRaw, n, el, u).withLatencies(lat)
	_ = conn.Close()
	if err := e.purge(queue); err != nil {
		return []Row{raw}, err
	}

	// redrive
	e.progress(ScenarioPublish, ClientRedrive)
	s, err := e.sub(ctx, "publish")
	if err != nil {
		return []Row{raw}, err
	}
	lat = lat[:0]
	m = startMeter()
	for _, batch := range batches {
		t0 := time.Now()
		if err := e.b.Publish(ctx, s.Topic, batch...); err != nil {
			return []Row{raw}, err
		}
		lat = append(lat, time.Since(t0))
	}
	el, u = m.stop()
	rd := row(ScenarioPublish, RabbitMQ, ClientRedrive, n, el, u).withLatencies(lat)
	compare(&rd, raw, ClientRaw, 0.95)
	if err := e.purge(rabbit.Queue(s.Topic, s.Group)); err != nil {
		return []Row{raw, rd}, err
	}
	return []Row{raw, rd}, nil
}

// fill publishes n sequence-numbered messages to topic through redrive
// (not measured).
func (e *rabbitEnv) fill(ctx context.Context, topic string, n int) error {
	for _, batch := range messages(n, 500, body(e.cfg.Size)) {
		if err := e.b.Publish(ctx, topic, batch...); err != nil {
			return fmt.Errorf("pre-fill %s: %w", topic, err)
		}
	}
	return nil
}

// consume: drain a pre-filled queue with a no-op handler and ack, redrive
// Consume vs a raw channel with the same prefetch and as many goroutines
// acking.
func (e *rabbitEnv) consume(ctx context.Context) ([]Row, error) {
	n := e.cfg.Messages
	// raw
	e.progress(ScenarioConsume, ClientRaw)
	exchange, queue, err := e.rawQueue("consume", "consume")
	if err != nil {
		return nil, err
	}
	if err := e.rawFill(ctx, exchange, "consume", n); err != nil {
		return nil, err
	}
	conn, ch, err := e.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := ch.Qos(8*e.cfg.Concurrency, 0, false); err != nil {
		return nil, fmt.Errorf("raw: qos: %w", err)
	}
	m := startMeter()
	dr := newDrain(n)
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("raw: consume: %w", err)
	}
	var wg sync.WaitGroup
	for range e.cfg.Concurrency {
		wg.Go(func() {
			for d := range deliveries {
				if err := d.Ack(false); err == nil {
					dr.hit()
				}
			}
		})
	}
	err = dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	_ = conn.Close()
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	raw := dr.row(ScenarioConsume, RabbitMQ, ClientRaw, u)

	// redrive
	rd, err := e.redriveDrain(ctx, ScenarioConsume, failNone)
	if err != nil {
		return []Row{raw}, err
	}
	compare(&rd, raw, ClientRaw, 0.95)
	return []Row{raw, rd}, nil
}

// rawFill publishes n messages through the raw client (not measured).
func (e *rabbitEnv) rawFill(ctx context.Context, exchange, key string, n int) error {
	conn, ch, err := e.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("raw: confirm mode: %w", err)
	}
	b := body(e.cfg.Size)
	var confs []*amqp.DeferredConfirmation
	for i := range n {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, amqp.Publishing{
			Headers: amqp.Table{headerSeq: strconv.Itoa(i)}, DeliveryMode: amqp.Persistent,
			MessageId: broker.NewMessageID(), Timestamp: time.Now(), Body: b,
		})
		if err != nil {
			return fmt.Errorf("raw: pre-fill: %w", err)
		}
		confs = append(confs, dc)
		if len(confs) == 500 || i == n-1 {
			for _, dc := range confs {
				if _, err := dc.WaitContext(ctx); err != nil {
					return fmt.Errorf("raw: pre-fill: %w", err)
				}
			}
			confs = confs[:0]
		}
	}
	return nil
}

// redriveDrain pre-fills a new subscription's queue and times Consume
// draining it with the handler of mode.
func (e *rabbitEnv) redriveDrain(ctx context.Context, scenario, mode string) (Row, error) {
	n := e.cfg.Messages
	e.progress(scenario, ClientRedrive)
	s, err := e.sub(ctx, scenario)
	if err != nil {
		return Row{}, err
	}
	if err := e.fill(ctx, s.Topic, n); err != nil {
		return Row{}, err
	}
	return consumeThrough(ctx, e.b, s, n, scenario, RabbitMQ, mode, e.cfg.Timeout)
}

// failing runs the retry or dlq scenario and compares it with the
// no-failure redrive consume row of prior, when there is one.
func (e *rabbitEnv) failing(ctx context.Context, mode string, prior []Row) ([]Row, error) {
	r, err := e.redriveDrain(ctx, mode, mode)
	if err != nil {
		return nil, err
	}
	switch mode {
	case failRetry:
		r.Note = "10 % fail once, retried at once; " + r.Note
	case failDLQ:
		r.Note = "1 % permanent → DLQ; " + r.Note
	}
	for _, p := range prior {
		if p.Scenario == ScenarioConsume && p.Client == ClientRedrive && p.Broker == RabbitMQ {
			compare(&r, p, "consume", 0.8)
		}
	}
	return []Row{r}, nil
}

// delay: PublishDelayed of DelayMessages messages with random delays in
// [0, 30 × resolution] to a running consumer; lateness past each due
// time, early deliveries and tier passes.
func (e *rabbitEnv) delay(ctx context.Context) ([]Row, error) {
	n := e.cfg.DelayMessages
	e.progress(ScenarioDelay, ClientRedrive)
	s, err := e.sub(ctx, "delay")
	if err != nil {
		return nil, err
	}
	var (
		mu         sync.Mutex
		late       = make([]time.Duration, 0, n)
		early      int
		passes     int
		maxPasses  int
		wantPasses int
	)
	dr := newDrain(n)
	h := func(_ context.Context, d *broker.Delivery) error {
		now := time.Now()
		due, err := strconv.ParseInt(d.Headers["bench-due"], 10, 64)
		if err != nil {
			return broker.Permanent(fmt.Errorf("bench-due: %w", err))
		}
		p, _ := strconv.Atoi(d.Headers[rabbit.HeaderTierPasses])
		l := now.Sub(time.Unix(0, due))
		mu.Lock()
		late = append(late, l)
		if l < 0 {
			early++
		}
		passes += p
		maxPasses = max(maxPasses, p)
		mu.Unlock()
		dr.hit()
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	m := startMeter()
	go func() { done <- e.b.Consume(cctx, s, h) }()

	span := int64(30 * e.cfg.Resolution / time.Millisecond)
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(rand.Int64N(span+1)) * time.Millisecond
		wantPasses += e.b.TierPasses(delays[i])
	}
	next := make(chan int)
	perr := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				d := delays[i]
				msg := broker.Message{Value: body(e.cfg.Size), Headers: map[string]string{
					"bench-due": strconv.FormatInt(time.Now().Add(d).UnixNano(), 10),
				}}
				if err := e.b.PublishDelayed(ctx, s.Topic, d, msg); err != nil {
					perr <- err
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-perr:
			close(next)
			wg.Wait()
			return nil, err
		}
	}
	close(next)
	wg.Wait()
	werr := dr.wait(ctx, e.cfg.Timeout)
	el, u := m.stop()
	cancel()
	if cerr := <-done; cerr != nil {
		return nil, fmt.Errorf("redrive consume: %w", cerr)
	}
	if werr != nil {
		return nil, fmt.Errorf("redrive: %w", werr)
	}
	r := row(ScenarioDelay, RabbitMQ, ClientRedrive, n, el, u).withLatencies(late)
	r.Rate = 0
	r.Early = early
	bound := e.cfg.Resolution + 50*time.Millisecond
	r.Target = fmt.Sprintf("0 early, p99 ≤ %s", bound)
	r.Met = early == 0 && r.P99 <= bound
	mode := e.rcfg.WithDefaults().Delay.Mode
	r.Note = fmt.Sprintf("mode %s; lateness p50/p99 shown, max %s; early %d; queues stored in per msg %.2f (max %d); delays 0–%dms",
		mode, dur(r.Max), early, float64(passes)/float64(n), maxPasses, span)
	if mode == rabbit.DelayHops {
		r.Note += fmt.Sprintf("; tiers predict %.2f passes, one consumer republish each", float64(wantPasses)/float64(n))
	} else {
		r.Note += "; no consumer republish"
	}
	return []Row{r}, nil
}
