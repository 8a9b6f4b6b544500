package broker

import (
	"context"
	"time"

	"github.com/redrive/redrive/broker/internal/deliveryset"
)

// Broker is the one interface every backend implements. All methods are safe
// for concurrent use.
type Broker interface {
	// Publish sends msgs to every group subscribed to topic and returns only
	// after the broker confirmed every one of them (RabbitMQ publisher
	// confirms; Kafka acks=all with an idempotent producer). On error some
	// messages may have been delivered: publishing again is at-least-once.
	Publish(ctx context.Context, topic string, msgs ...Message) error
	// PublishDelayed is Publish with delivery to the groups no earlier than
	// delay from now.
	PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...Message) error
	// Declare creates what the subscriptions need on the broker (RabbitMQ
	// exchanges, queues and bindings; Kafka topics), idempotently. After it
	// returns, messages published to a subscription's topic are kept for its
	// group even before Consume runs. Consume declares too.
	Declare(ctx context.Context, subs ...Subscription) error
	// Consume subscribes h to sub and blocks until ctx ends, then stops
	// taking new messages, lets in-flight handlers finish (bounded by
	// sub.ShutdownTimeout), hands the rest back to the broker and returns
	// nil. It returns an error early when the subscription is invalid or the
	// broker fails in a way it cannot recover from.
	Consume(ctx context.Context, sub Subscription, h Handler) error
	// Close releases connections. Consume calls must have returned.
	Close() error
}

// Handler handles one delivery. nil = done; Permanent(err) = straight to the
// dead-letter queue; RetryAfter(err, d) = retry after d; Requeue(err) =
// back to the group at once with the same attempt number; any other error
// = retry by the subscription's policy, dead-letter queue when it is
// exhausted.
type Handler func(ctx context.Context, d *Delivery) error

// Message is what an application publishes.
type Message struct {
	// ID identifies the message for de-duplication. Generated when empty.
	ID string
	// Key orders and partitions messages (Kafka partition key; kept as a
	// header on RabbitMQ). May be nil.
	Key []byte
	// Value is the payload, any bytes.
	Value []byte
	// Headers are application headers. Names starting with "x-redrive-" are
	// owned by redrive.
	Headers map[string]string
	// Timestamp is when the message was created; now when zero.
	Timestamp time.Time
}

// Delivery is one message handed to a Handler, with its story. With
// Subscription.HeadersOnDemand its Headers may be nil: Header and
// AllHeaders read the headers in either case.
type Delivery struct {
	Message
	// Topic is the topic the message was published to.
	Topic string
	// Group is the worker (consumer group) that received it.
	Group string
	// Instance is the worker process that received it (the backend's
	// InstanceID: heartbeat.instance, else hostname-pid); dead letters it
	// makes carry it as worker_instance.
	Instance string
	// Source is the queue (RabbitMQ) or topic (Kafka) it was read from.
	Source string
	// Partition and Offset locate a Kafka record; -1 on RabbitMQ.
	Partition int32
	Offset    int64
	// Attempt is 1 on the first delivery, 2 on the first retry, and so on.
	Attempt int
	// FirstFailureAt and LastFailureAt are zero before the first failure.
	FirstFailureAt time.Time
	LastFailureAt  time.Time
	// LastError is the previous failure's message, if any.
	LastError string
	// Redelivered is set when the broker delivers the message again after a
	// crash, a reconnect or a rebalance (a possible duplicate).
	Redelivered bool

	reader    deliveryset.HeaderReader // Headers' source when Headers is nil (HeadersOnDemand)
	derivedID func(*Delivery) string   // StableID of a message without an ID; nil: none
}

// RetryMode says how a failed message waits for its retry.
type RetryMode string

const (
	// Blocking retries in place: ordering within a partition is kept and the
	// partition (Kafka) waits. The default.
	Blocking RetryMode = "blocking"
	// NonBlocking moves the failed message aside to wait, so healthy traffic
	// keeps flowing; order is not kept.
	NonBlocking RetryMode = "non_blocking"
	// Share consumes the topic as a Kafka share group (KIP-932) named after
	// the worker: records are taken and acknowledged one by one, a failed
	// one waits out a short back-off holding its lock (a long one moves
	// aside, as NonBlocking), any number of handlers share any number of
	// partitions, and there is no order within a partition. Kafka only
	// (4.2+ with share groups enabled).
	Share RetryMode = "share"
)
