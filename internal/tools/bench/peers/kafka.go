package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	kafkago "github.com/segmentio/kafka-go"
)

// fetchMaxWait is how long a fetch waits for data on both Kafka peers, as
// redrive's default (kafka.DefaultFetchMaxWait) and Sarama's.
const fetchMaxWait = 500 * time.Millisecond

// saramaPublisherConfig is watermill-kafka's default synchronous producer
// made to give redrive's guarantee: acks=all and idempotent (watermill's
// default waits for the leader only).
func saramaPublisherConfig() *sarama.Config {
	c := wkafka.DefaultSaramaSyncPublisherConfig()
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1 // required by Sarama's idempotent producer
	return c
}

// saramaPublish publishes through watermill-kafka: one warm-up message
// (unmeasured, as the bench's own Kafka publish rows), then Messages in
// Publish calls of Batch.
func saramaPublish(ctx context.Context, r Request, m *meter, _ *slog.Logger) error {
	pub, err := saramaPublisher(r)
	if err != nil {
		return err
	}
	defer pub.Close()
	b := body(r.Size)
	if err := pub.Publish(r.Topic, message.NewMessage(watermill.NewUUID(), b)); err != nil {
		return fmt.Errorf("warm-up publish: %w", err)
	}
	return publishTimed(ctx, m, r.Messages, wmMessages(r.Messages, r.Batch, b),
		func(batch []*message.Message) error { return pub.Publish(r.Topic, batch...) },
		"Sarama SyncProducer: one message per round trip, acks=all, idempotent (watermill's default: leader ack only)")
}

// saramaPublisher is watermill-kafka's publisher with saramaPublisherConfig.
func saramaPublisher(r Request) (*wkafka.Publisher, error) {
	pub, err := wkafka.NewPublisher(wkafka.PublisherConfig{
		Brokers:               r.Brokers,
		Marshaler:             wkafka.DefaultMarshaler{},
		OverwriteSaramaConfig: saramaPublisherConfig(),
	}, watermill.NopLogger{})
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	return pub, nil
}

// saramaConsume drains the pre-filled topic through a watermill router on
// watermill-kafka's consumer-group subscriber (Sarama: one message in
// flight per partition, marked on ack, offsets auto-committed every
// second); retry and dlq add PoisonQueue (producing with acks=all) and
// Retry.
func saramaConsume(ctx context.Context, r Request, m *meter, _ *slog.Logger) error {
	sc := wkafka.DefaultSaramaSubscriberConfig()
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.MaxWaitTime = fetchMaxWait
	sub, err := wkafka.NewSubscriber(wkafka.SubscriberConfig{
		Brokers:               r.Brokers,
		Unmarshaler:           wkafka.DefaultMarshaler{},
		OverwriteSaramaConfig: sc,
		ConsumerGroup:         r.Group,
	}, watermill.NopLogger{})
	if err != nil {
		return fmt.Errorf("subscriber: %w", err)
	}
	defer sub.Close()
	var pub message.Publisher
	if r.Scenario != ScenarioConsume {
		p, err := saramaPublisher(r)
		if err != nil {
			return err
		}
		defer p.Close()
		pub = p
	}
	note := "router on a Sarama consumer group: one message in flight per partition, offsets committed every 1 s"
	switch r.Scenario {
	case ScenarioRetry:
		note += "; Retry middleware re-runs the handler in-process at once (as redrive's blocking mode)"
	case ScenarioDLQ:
		note += "; PoisonQueue middleware: SyncProducer (acks=all) to <topic>.poison, then ack"
	}
	return routerDrain(ctx, r, m, sub, pub, 1, note)
}

// kafkaGoPublish publishes through a kafka-go Writer: one warm-up message
// (unmeasured), then Messages in WriteMessages calls of Batch, each
// awaited.
func kafkaGoPublish(ctx context.Context, r Request, m *meter, _ *slog.Logger) error {
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(r.Brokers...),
		Topic:        r.Topic,
		RequiredAcks: kafkago.RequireAll,
		BatchSize:    r.Batch,
		// The default, 1 s, holds every batch that does not fill a
		// partition's BatchSize (a call's messages are spread over the
		// partitions); 1 ms comes close to franz-go's linger 0.
		BatchTimeout: time.Millisecond,
	}
	defer w.Close()
	b := body(r.Size)
	if err := w.WriteMessages(ctx, kafkago.Message{Value: b}); err != nil {
		return fmt.Errorf("warm-up write: %w", err)
	}
	batches := batched(r.Messages, r.Batch, func(i int) kafkago.Message {
		return kafkago.Message{Value: b, Headers: []kafkago.Header{{Key: headerSeq, Value: []byte(strconv.Itoa(i))}}}
	})
	return publishTimed(ctx, m, r.Messages, batches,
		func(batch []kafkago.Message) error { return w.WriteMessages(ctx, batch...) },
		"Writer, BatchTimeout 1 ms, acks=all; weaker: not idempotent (kafka-go has no idempotent producer)")
}

// kafkaGoConsume drains the pre-filled topic with a kafka-go Reader in the
// consumer group: one goroutine fetching, each message handed to
// CommitMessages, committed every second.
func kafkaGoConsume(ctx context.Context, r Request, m *meter, _ *slog.Logger) error {
	if err := m.start(); err != nil {
		return err
	}
	rd := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:        r.Brokers,
		GroupID:        r.Group,
		Topic:          r.Topic,
		StartOffset:    kafkago.FirstOffset,
		CommitInterval: time.Second,
		MaxWait:        fetchMaxWait,
	})
	defer rd.Close()
	dr := newDrain(r.Messages, m.t0)
	for range r.Messages {
		msg, err := rd.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("fetch with %d of %d messages done: %w", dr.count.Load(), r.Messages, err)
		}
		dr.hit()
		if err := rd.CommitMessages(ctx, msg); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return m.finish(dr.result("Reader in a group, one goroutine, offsets committed every 1 s"))
}
