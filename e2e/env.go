package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
)

// Env is what a backend gives the suite.
type Env struct {
	// Name of the backend, "rabbitmq" or "kafka".
	Name string
	// New returns a broker connected to the backend under test. The suite
	// closes it at the end of the test.
	New func(t testing.TB) broker.Broker
	// DeadLetters is a probe: it waits until want dead letters of
	// (topic, group) have arrived (failing the test when ctx ends first),
	// keeps reading for quiet so that extra entries show, and returns all it
	// read.
	DeadLetters func(ctx context.Context, t testing.TB, topic, group string, want int, quiet time.Duration) []dlq.Entry
	// Resolution is the delay accuracy the backend promises: a delayed
	// message is never early and at most Resolution (plus scheduling
	// slack) late. The suite's back-offs are multiples of it.
	Resolution time.Duration
	// TierPasses, when set, returns how many delay tiers a delivered
	// message passed through during its last wait, and MaxTierPasses the
	// bound the backend promises for a delay (RabbitMQ: (factor-1) × levels).
	// Nil for backends without tiers.
	TierPasses    func(d *broker.Delivery) int
	MaxTierPasses func(delay time.Duration) int
	// Router is the backend's dlq.Router: the replay route of a worker
	// (topic, group), as the daemon builds it from the configuration, and
	// with it the name of its dead-letter queue.
	Router dlq.Router
	// RawPublish publishes one message to topic with the backend's own
	// client (kgo, amqp091-go), as another producer would: no message id,
	// no redrive header, the headers' values as bytes, and on RabbitMQ the
	// typed headers of RawTyped besides.
	RawPublish func(t testing.TB, topic string, key, value []byte, headers map[string][]byte)
	// RawTyped are the headers RawPublish adds of its own (AMQP integers,
	// booleans, decimals, timestamps, nested tables ...), by name, with
	// their text as a handler sees it; a header without one (a nested
	// table, an array) is not in the string view, and not here.
	RawTyped map[string]string
	// RetryMode is the retry mode of every subscription of the suite;
	// empty = the default (blocking). Kafka runs the suite with each.
	RetryMode broker.RetryMode
	// Store, when set, opens the store the dead-letter operations suite
	// (RunDLQ, RunRelay) keeps dead letters in, one per case (the
	// in-memory dlq/memstore: the suite on a store that is no server);
	// the store outage case, which cuts PostgreSQL off behind a proxy,
	// then reports itself skipped. Nil: PostgreSQL (dlq/pgstore, in a
	// schema of each case's own).
	Store func(t testing.TB) dlq.Store
}

// DLQName names the dead-letter queue of (topic, group) as the keeper
// stores it (the backend's Router says it: RabbitMQ "<topic>.<group>.dlq",
// Kafka "<topic>.dlq").
func (e Env) DLQName(topic, group string) string { return e.Router.Route(topic, group).DLQ }
