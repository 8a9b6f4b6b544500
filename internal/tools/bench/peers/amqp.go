package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	amqp "github.com/rabbitmq/amqp091-go"
)

// amqpConfig is watermill-amqp's durable topic configuration on the
// bench's exchange and queue: persistent messages, publisher confirms on
// (watermill-amqp's default is off), a pool of channels as large as the
// consumers, and the bench's prefetch shared out over the consumers.
func amqpConfig(r Request) wamqp.Config {
	c := wamqp.NewDurableTopicConfig(r.URL, r.Exchange, r.Queue)
	c.Exchange.Durable = true // the "durable" topic config leaves the exchange transient
	if r.QueueType != "" {
		c.Queue.Arguments = amqp.Table{"x-queue-type": r.QueueType}
	}
	c.Publish.ConfirmDelivery = true
	c.Publish.ChannelPoolSize = max(1, r.Concurrency)
	c.Consume.Qos.PrefetchCount = max(1, r.Prefetch/max(1, r.Concurrency))
	return c
}

// amqpPublish publishes Messages messages in Publish calls of Batch, each
// awaited, to the bench's exchange with the routing key Topic.
func amqpPublish(ctx context.Context, r Request, m *meter, _ *slog.Logger) error {
	pub, err := wamqp.NewPublisher(amqpConfig(r), watermill.NopLogger{})
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	batches := wmMessages(r.Messages, r.Batch, body(r.Size))
	return publishTimed(ctx, m, r.Messages, batches,
		func(batch []*message.Message) error { return pub.Publish(r.Topic, batch...) },
		"Publish per batch, each message's confirm awaited before the next (ConfirmDelivery on, pooled channel)")
}

// wmMessages returns n watermill messages of body with the sequence
// header, in batches of batch.
func wmMessages(n, batch int, b []byte) [][]*message.Message {
	return batched(n, batch, func(i int) *message.Message {
		msg := message.NewMessage(watermill.NewUUID(), b)
		msg.Metadata.Set(headerSeq, strconv.Itoa(i))
		return msg
	})
}

// amqpConsume drains the bench's pre-filled queue through a watermill
// router with Concurrency handlers (each a subscription: a channel and a
// consumer of its own); retry and dlq add watermill's PoisonQueue and
// Retry middleware.
func amqpConsume(ctx context.Context, r Request, m *meter, _ *slog.Logger) error {
	cfg := amqpConfig(r)
	sub, err := wamqp.NewSubscriber(cfg, watermill.NopLogger{})
	if err != nil {
		return fmt.Errorf("subscriber: %w", err)
	}
	defer sub.Close()
	var pub message.Publisher
	if r.Scenario != ScenarioConsume {
		p, err := wamqp.NewPublisher(cfg, watermill.NopLogger{})
		if err != nil {
			return fmt.Errorf("publisher: %w", err)
		}
		defer p.Close()
		pub = p
	}
	note := fmt.Sprintf("router, %d subscriptions × prefetch %d, ack after the handler", r.Concurrency, cfg.Consume.Qos.PrefetchCount)
	switch r.Scenario {
	case ScenarioRetry:
		note += "; weaker: Retry middleware re-runs the handler in-process at once, no broker round trip (the attempt count dies with the process)"
	case ScenarioDLQ:
		note += "; PoisonQueue middleware: publish with confirm, then ack"
	}
	return routerDrain(ctx, r, m, sub, pub, r.Concurrency, note)
}

// routerDrain runs a watermill router of handlers subscriptions to Topic
// on sub until Messages messages are done; for retry and dlq it adds
// PoisonQueue (to PoisonTopic through pub) and Retry (three retries at
// once, none for a permanent failure) middleware.
func routerDrain(ctx context.Context, r Request, m *meter, sub message.Subscriber, pub message.Publisher, handlers int, note string) error {
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, watermill.NopLogger{})
	if err != nil {
		return err
	}
	if r.Scenario != ScenarioConsume {
		poison, err := middleware.PoisonQueue(pub, r.PoisonTopic)
		if err != nil {
			return err
		}
		router.AddMiddleware(poison, middleware.Retry{
			MaxRetries:  3,
			ShouldRetry: func(p middleware.RetryParams) bool { return !errors.Is(p.Err, errPermanent) },
		}.Middleware)
	}
	if err := m.start(); err != nil {
		return err
	}
	dr := newDrain(r.Messages, m.t0)
	h := func(msg *message.Message) error {
		seq, err := seqOf(msg.Metadata.Get(headerSeq))
		if err != nil {
			return err
		}
		first := msg.Metadata.Get("bench-failed") == ""
		switch err := fate(r.Scenario, seq, first); {
		case errors.Is(err, errPermanent):
			dr.hit()
			return err
		case err != nil:
			msg.Metadata.Set("bench-failed", "1")
			return err
		}
		dr.hit()
		return nil
	}
	for i := range handlers {
		router.AddConsumerHandler("bench-"+strconv.Itoa(i), r.Topic, sub, h)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- router.Run(rctx) }()
	if err := dr.wait(ctx, done); err != nil {
		return err
	}
	ferr := m.finish(dr.result(note))
	cancel()
	if err := <-done; err != nil && ferr == nil {
		ferr = fmt.Errorf("router: %w", err)
	}
	return ferr
}
