package exactlyonce_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/exactlyonce"
)

// exampleDB connects to $DATABASE_URL (default the local test database)
// and returns a pool and a schema of the example's own, with a drop func.
func exampleDB(ctx context.Context) (*pgxpool.Pool, string, func(), error) {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, "", nil, err
	}
	schema := "example_" + broker.NewMessageID()[:8]
	return pool, schema, func() {
		_, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
		pool.Close()
	}, nil
}

// Example is a payout worker that pays once and tells the ledger service
// so only if it paid: the inbox runs its handler in a transaction that
// records the command, the outbox writes the event in the same
// transaction, and the relay publishes it once committed. The command is
// delivered twice (a redelivery after a crash before the
// acknowledgement): the second delivery finds it recorded and is
// acknowledged without paying. The broker is Kafka on an in-process kfake
// cluster; the database is $DATABASE_URL.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, schema, drop, err := exampleDB(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	quiet := slog.New(slog.DiscardHandler)
	b, err := kafka.New(ctx, kafka.Config{Brokers: cluster.ListenAddrs(), Partitions: 1,
		FetchMaxWait: 100 * time.Millisecond, CommitInterval: 100 * time.Millisecond, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	// The tables, in the application's database.
	effects, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: schema, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := effects.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.payouts (deal text PRIMARY KEY, paid_at timestamptz NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}

	// The worker: its effect and its event in the inbox's transaction.
	inbox, err := effects.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	pay := inbox.Handler(func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.payouts (deal, paid_at) VALUES ($1, now())`, string(d.Value)); err != nil {
			return err
		}
		return effects.Publish(ctx, tx, "payouts.paid", broker.Message{Key: d.Value, Value: d.Value})
	})
	commands := broker.Subscription{Topic: "payouts.commands", Group: "payout-executor"}
	events := broker.Subscription{Topic: "payouts.paid", Group: "ledger"}
	if err := b.Declare(ctx, commands, events); err != nil {
		fmt.Println(err)
		return
	}
	delivered := make(chan error, 2)
	go func() {
		_ = b.Consume(ctx, commands, func(ctx context.Context, d *broker.Delivery) error {
			err := pay(ctx, d)
			delivered <- err
			return err
		})
	}()

	// The relay publishes what committed.
	relay, err := effects.NewRelay(exactlyonce.RelayConfig{Broker: b})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = relay.Run(ctx) }()
	paid := make(chan string, 2)
	go func() {
		_ = b.Consume(ctx, events, func(_ context.Context, d *broker.Delivery) error { paid <- string(d.Value); return nil })
	}()

	// The command, and the same command again.
	cmd := broker.Message{ID: broker.NewMessageID(), Value: []byte("deal-42")}
	if err := b.Publish(ctx, commands.Topic, cmd, cmd); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("delivered:", <-delivered, <-delivered)
	fmt.Println("ledger told:", <-paid)
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.payouts`).Scan(&n); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("payouts:", n)
	// Output:
	// delivered: <nil> <nil>
	// ledger told: deal-42
	// payouts: 1
}

// ExampleInbox_Hook marks an execution failed once per dead letter: the
// keeper calls its hook at least once (again after a crash before the
// acknowledgement), the inbox records the entry in the hook's
// transaction, and a database error is returned so that the keeper offers
// the dead letter again.
func ExampleInbox_Hook() {
	ctx := context.Background()
	pool, schema, drop, err := exampleDB(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	effects, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: schema})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := effects.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+schema+`.executions (id text PRIMARY KEY, status text NOT NULL, failures int NOT NULL DEFAULT 0);
		INSERT INTO `+schema+`.executions (id, status) VALUES ('42', 'running')`); err != nil {
		fmt.Println(err)
		return
	}
	inbox, err := effects.Inbox(exactlyonce.InboxConfig{Name: "mark-failed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	hook := inbox.Hook(func(ctx context.Context, tx pgx.Tx, r dlq.Record) error {
		_, err := tx.Exec(ctx, `UPDATE `+schema+`.executions SET status = 'failed', failures = failures + 1 WHERE id = $1`, string(r.Entry.OriginalKey))
		return err
	})
	// keeper.Config{Hook: hook, ...}; here, the keeper's two calls.
	r := dlq.Record{DLQ: "payouts.commands.dlq", ID: "0-7", Entry: dlq.Entry{OriginalKey: []byte("42")}}
	for range 2 {
		if err := hook.DeadLettered(ctx, r); err != nil {
			fmt.Println(errors.Unwrap(err))
			return
		}
	}
	var status string
	var failures int
	if err := pool.QueryRow(ctx, `SELECT status, failures FROM `+schema+`.executions WHERE id = '42'`).Scan(&status, &failures); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(status, failures)
	// Output: failed 1
}
