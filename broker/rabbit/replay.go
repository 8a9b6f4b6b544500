package rabbit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// Republish implements driver.Republisher: it puts a dead letter back on
// its route (from the configuration), and only there: a worker's queue
// (to.Target) through the retry exchange with that queue as routing key;
// for a foreign DLQ, the exchange it names (to.Exchange) with to.Target as
// routing key. The body, key, application headers with their
// AMQP types and the properties are the original ones (entries stored
// before redrive kept the wire form replay with their string headers,
// persistent); the headers RabbitMQ wrote when it dead-lettered the
// message (x-death, x-first-death-*, x-last-death-*), kept in the entry,
// are not sent; expiration and user id are not set (the copy would
// expire, or be refused for another connection's user).
// x-redrive-replayed-from names the entry (replayedFrom), x-redrive-topic
// is the route's topic (when it has one), and the attempt count starts
// again at 1. It returns once the broker confirmed. A worker's queue that
// no longer exists parks the message in the unroutable queue; a message
// another exchange routes nowhere is an error (broker.ErrUnroutable).
func (b *Broker) Republish(ctx context.Context, e driver.Entry, to driver.Route, replayedFrom string) error {
	exchange, key := b.names.Retry(), to.Target
	switch {
	case to.Exchange != "":
		exchange = to.Exchange
	case to.Target == "":
		return errors.New("rabbit: republish: the route has no target queue")
	}
	var msg amqp.Publishing
	if e.OriginalWire != nil {
		f, err := wire.Decode(e.OriginalWire)
		if err != nil {
			return fmt.Errorf("rabbit: republish %s: its stored wire form: %w", replayedFrom, err)
		}
		msg = publishing(f, amqpTable(withoutBrokerOwned(f.Headers.App())))
	} else {
		msg = amqp.Publishing{Headers: toTable(driver.AppHeaders(e.OriginalHeaders)), DeliveryMode: amqp.Persistent}
	}
	msg.Headers[broker.HeaderReplayedFrom] = replayedFrom
	if to.Topic != "" {
		msg.Headers[driver.HeaderTopic] = to.Topic
	}
	if e.OriginalKey != nil {
		msg.Headers[driver.HeaderKey] = string(e.OriginalKey)
	}
	msg.MessageId = e.MessageID
	if msg.MessageId == "" { // a foreign dead letter: the same id each time this entry is replayed
		msg.MessageId = broker.DerivedMessageID([]byte("replay"), []byte(replayedFrom))
	}
	msg.Body = e.OriginalValue
	if err := b.pub.publish(ctx, outgoing{exchange: exchange, key: key, msg: msg}); err != nil {
		if exchange == b.names.Retry() {
			return fmt.Errorf("rabbit: republish to queue %q: %w", key, err)
		}
		return fmt.Errorf("rabbit: republish to exchange %q, routing key %q: %w", exchange, key, err)
	}
	return nil
}

// withoutBrokerOwned is t without the headers RabbitMQ writes when it
// dead-letters a message (x-death, x-first-death-*, x-last-death-*):
// the keeper keeps them in the entry, a replay does not send them.
func withoutBrokerOwned(t wire.Table) wire.Table {
	return slices.DeleteFunc(t, func(f wire.Field) bool { return brokerOwned(f.Name) })
}

// Route is the replay route of a worker (topic, group) on RabbitMQ: its
// DLQ "<topic>.<group>.dlq" replays to its queue "<topic>.<group>", the
// only queue its entries may say they failed in.
func Route(topic, group string) driver.Route {
	q := Queue(topic, group)
	return driver.Route{DLQ: DLQ(q), Topic: topic, Worker: group, Target: q, Sources: []string{q}}
}

// Router is the driver.Router of RabbitMQ: its Route is Route, and so is its
// ForeignWorkerRoute.
type Router struct{}

// Route returns Route(topic, worker).
func (Router) Route(topic, worker string) driver.Route { return Route(topic, worker) }

// ForeignWorkerRoute returns Route(topic, worker): a worker declared
// foreign (written in another language, not run by redrive) consumes its
// group queue "<topic>.<group>", which redrive declares, so a replay
// through the retry exchange reaches it, and only it.
func (Router) ForeignWorkerRoute(topic, worker string) driver.Route { return Route(topic, worker) }
