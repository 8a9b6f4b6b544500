package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

var _ driver.Republisher = (*Broker)(nil)

// Republish implements driver.Republisher: it puts the dead letter e back on
// its route's topic (to.Target, the configured worker's retry topic
// "<topic>.retry.<worker>", so that only that worker handles it again, or,
// for a worker declared foreign, "<topic>" itself; never a topic the
// entry names), with the original key and value (null and
// empty kept apart) and headers exactly (in order, repeated and binary
// names, null values; entries stored without their wire form send their
// string headers, sorted), the message id, and x-redrive-replayed-from set
// to replayedFrom. It returns once the broker acknowledged it. A missing
// retry topic is an error (redrive topology apply creates it). The replay is
// stamped now: the worker's max age counts from the replay.
func (b *Broker) Republish(ctx context.Context, e driver.Entry, to driver.Route, replayedFrom string) error {
	if b.isClosed() {
		return broker.ErrClosed
	}
	if to.Target == "" {
		return errors.New("kafka: republish: the route has no target topic")
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.DeliveryTimeout)
	defer cancel()
	exists, err := b.topicExists(ctx, to.Target)
	if err != nil {
		return fmt.Errorf("kafka: republish (brokers %s): %w", b.brokerList(), err)
	}
	if !exists {
		return fmt.Errorf("kafka: republish %s: topic %q does not exist (redrive topology apply creates the workers' retry topics)", replayedFrom, to.Target)
	}
	var t wire.Table
	if e.OriginalWire != nil {
		f, err := wire.Decode(e.OriginalWire)
		if err != nil {
			return fmt.Errorf("kafka: republish %s: its stored wire form: %w", replayedFrom, err)
		}
		t = f.Headers.App()
	} else {
		for _, k := range slices.Sorted(maps.Keys(driver.AppHeaders(e.OriginalHeaders))) {
			t = append(t, wire.Field{Name: k, Value: []byte(e.OriginalHeaders[k])})
		}
	}
	id := e.MessageID
	if id == "" { // a foreign dead letter: the same id each time this entry is replayed
		id = broker.DerivedMessageID([]byte("replay"), []byte(replayedFrom))
	}
	t = append(t, wire.Field{Name: broker.HeaderReplayedFrom, Value: replayedFrom}, wire.Field{Name: driver.HeaderMessageID, Value: id})
	r := &kgo.Record{Topic: to.Target, Key: e.OriginalKey, Value: e.OriginalValue, Headers: recordHeaders(t), Timestamp: time.Now()}
	if err := b.produce(ctx, r); err != nil {
		return fmt.Errorf("kafka: republish %s to %q: %w", replayedFrom, to.Target, err)
	}
	return nil
}

// Route is the replay route of a worker (topic, group) on Kafka: its
// entries sit in the topic's shared DLQ "<topic>.dlq" and replay to the
// worker's retry topic; they may say they failed in the topic or in that
// retry topic.
func Route(topic, group string) driver.Route {
	retry := RetryTopic(topic, group)
	return driver.Route{DLQ: DLQTopic(topic), Topic: topic, Worker: group, Target: retry, Sources: []string{topic, retry}}
}

// ForeignWorkerRoute is the replay route of a worker (topic, group)
// declared foreign (written in another language, it consumes topic
// itself, never redrive's retry topic): its entries sit in "<topic>.dlq"
// too, and replay to topic, which every consumer group of the topic
// receives (Route.EveryGroup).
func ForeignWorkerRoute(topic, group string) driver.Route {
	return driver.Route{DLQ: DLQTopic(topic), Topic: topic, Worker: group, Target: topic, Sources: []string{topic}, EveryGroup: true}
}

// ForeignRoute is the replay route of another application's dead-letter
// topic dlqName (kafka.foreign_dlqs: a Spring Kafka "orders.DLT", a Kafka
// Connect "dlq-jdbc-sink"): its entries replay to the topic target the
// operator configured, which every consumer of that topic reads (no
// worker), never to the topic a record's headers name.
func ForeignRoute(dlqName, target string) driver.Route {
	return driver.Route{DLQ: dlqName, Topic: target, Target: target, Foreign: true, EveryGroup: true}
}

// Router is the driver.Router of Kafka: its Route is Route, its
// ForeignWorkerRoute ForeignWorkerRoute.
type Router struct{}

// Route returns Route(topic, worker).
func (Router) Route(topic, worker string) driver.Route { return Route(topic, worker) }

// ForeignWorkerRoute returns ForeignWorkerRoute(topic, worker).
func (Router) ForeignWorkerRoute(topic, worker string) driver.Route {
	return ForeignWorkerRoute(topic, worker)
}

// topicExists reports whether topic exists, remembering the ones that do.
func (b *Broker) topicExists(ctx context.Context, topic string) (bool, error) {
	if b.isKnown(topic) {
		return true, nil
	}
	details, err := b.describeTopics(ctx, topic)
	if err != nil {
		return false, err
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		b.markKnown(topic)
		return true, nil
	}
	return false, nil
}
