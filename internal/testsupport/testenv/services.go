package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
)

// AMQP dials RabbitMQ and opens a channel, failing t when it cannot; the
// connection closes when t ends.
func AMQP(t testing.TB) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(RabbitMQ.URL())
	if err != nil {
		RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("RabbitMQ channel: %v", err)
	}
	return ch
}

// DeleteQueues deletes the named RabbitMQ queues, best effort.
func DeleteQueues(names ...string) {
	DeleteTopology(names, func(q string) (string, string) { return "queue", q })
}

// DeleteTopology deletes, best effort and on a connection of its own, the
// queues and exchanges of plan; of returns an item's kind ("queue",
// "exchange"; other kinds are passed over) and name. It is the cleanup
// of a test's RabbitMQ topology (pass rabbit.Broker.Plan and a func
// returning Declaration.Kind and Name).
func DeleteTopology[D any](plan []D, of func(D) (kind, name string)) {
	conn, err := amqp.Dial(RabbitMQ.URL())
	if err != nil {
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return
	}
	for _, d := range plan {
		switch kind, name := of(d); kind {
		case "queue":
			_, _ = ch.QueueDelete(name, false, false, false)
		case "exchange":
			_ = ch.ExchangeDelete(name, false, false)
		}
	}
}

// RedisClient connects to Redis (failing t when it does not answer a
// PING within 2 s); the client closes when t ends.
func RedisClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Redis.URL(), DialTimeout: time.Second, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		Redis.Fail(t, err)
	}
	return c
}

// RedisPrefix returns a key prefix of t's own (Name and ':'); the keys
// under it in c are deleted when t ends.
func RedisPrefix(t testing.TB, c *redis.Client) string {
	prefix := Name(t) + ":"
	t.Cleanup(func() { DeleteKeys(t, c, prefix) })
	return prefix
}

// DeleteKeys deletes the keys of c under prefix (SCAN and UNLINK).
func DeleteKeys(t testing.TB, c *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			c.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		c.Unlink(ctx, keys...)
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleanup of redis keys %s*: %v", prefix, err)
	}
}

// Schema returns a PostgreSQL schema name of t's own (Name with '_'),
// dropped with everything in it when t ends. Nothing creates it: the
// store opened on it does.
func Schema(t testing.TB) string {
	schema := strings.ReplaceAll(Name(t), "-", "_")
	t.Cleanup(func() { DropSchema(t, schema) })
	return schema
}

// DropSchema drops schema and everything in it, if it exists; a failure
// is reported to t.
func DropSchema(t testing.TB, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, PostgreSQL.URL())
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

// FilledQueue declares a durable queue named Name(t) (RabbitMQ 4
// deprecates transient non-exclusive queues), deleted when t ends, and
// publishes n messages to it on ch (a channel of AMQP), each confirmed.
func FilledQueue(t testing.TB, ch *amqp.Channel, n int) string {
	t.Helper()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	name := Name(t)
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { DeleteQueues(name) })
	ctx := context.Background()
	for i := range n {
		conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", name, true, false, amqp.Publishing{Body: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := conf.WaitContext(ctx); err != nil || !ok {
			t.Fatalf("publish %d not confirmed: %v", i, err)
		}
	}
	return name
}
