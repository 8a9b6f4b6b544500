//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/exactlyonce"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// The exactly-once cases (effects_test.go) count effects, not deliveries:
// the worker writes one row per command it applies to a ledger table, in
// the inbox's transaction (or, "without the inbox", in a transaction of
// its own doing the same insert), and the case reads the ledger. The
// children are this binary, kind childEffects, configured by the
// variables below.

const childEffects = "effects"

const (
	envBrokerKind = "FAULTS_BROKER"     // rabbitmq or kafka
	envDB         = "FAULTS_DB"         // the database URL
	envSchema     = "FAULTS_SCHEMA"     // the schema of the tables and the ledger
	envRole       = "FAULTS_ROLE"       // worker (default) or relay
	envWorker     = "FAULTS_WORKER"     // the worker's group
	envNext       = "FAULTS_NEXT"       // a chain's next topic: the worker publishes its event there through the outbox
	envNoInbox    = "FAULTS_NO_INBOX"   // 1: the plain handler
	envKillStep   = "FAULTS_KILL_STEP"  // the step (killStep) at which the worker SIGKILLs itself...
	envKillAt     = "FAULTS_KILL_AT"    // ... handling this command
	envKillAfter  = "FAULTS_KILL_AFTER" // relay: SIGKILL itself after this many confirmed Publish calls
)

// The steps of a worker's handling of one command, where a chain case
// kills it in turn.
const (
	stepReceived  = 1 // delivered, no transaction yet
	stepClaimed   = 2 // in the transaction, the inbox's record written
	stepApplied   = 3 // the effect written
	stepPublished = 4 // the event written to the outbox
	stepCommitted = 5 // committed, not acknowledged
)

var stepNames = map[int]string{stepReceived: "received", stepClaimed: "claimed", stepApplied: "applied",
	stepPublished: "published to the outbox", stepCommitted: "committed, not acked"}

// effectsDB is a case's database: a schema of its own (dropped when the
// test ends) holding the store's tables and the ledger.
type effectsDB struct {
	url, schema string
	pool        *pgxpool.Pool
	store       *exactlyonce.Store
}

func newEffectsDB(t testing.TB, url string) *effectsDB {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	db := &effectsDB{url: url, schema: "faults_eo_" + broker.NewMessageID()[:10], pool: pool}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+db.schema+` CASCADE`)
		pool.Close()
	})
	if db.store, err = exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: db.schema, Logger: quietLog}); err != nil {
		t.Fatal(err)
	}
	if err := db.store.Migrate(context.Background()); err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	if _, err := pool.Exec(context.Background(), `CREATE TABLE `+db.schema+`.ledger (
		n bigserial PRIMARY KEY, worker text NOT NULL, command text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
		t.Fatal(err)
	}
	return db
}

// env is what a child needs to reach the database.
func (db *effectsDB) env() []string {
	return []string{envDB + "=" + db.url, envSchema + "=" + db.schema}
}

// effects counts the ledger's rows of worker by command.
func (db *effectsDB) effects(t testing.TB, worker string) map[string]int {
	t.Helper()
	rows, err := db.pool.Query(context.Background(), `SELECT command, count(*) FROM `+db.schema+`.ledger WHERE worker = $1 GROUP BY command`, worker)
	if err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	out := map[string]int{}
	for rows.Next() {
		var c string
		var n int
		if err := rows.Scan(&c, &n); err != nil {
			t.Fatal(err)
		}
		out[c] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var quietLog = slog.New(slog.DiscardHandler)

// effectsSub is the subscription of the cases' workers: retries enough
// to outlast a few seconds of outage (back-off up to 1 s, 30 retries).
func effectsSub(topic, group string) broker.Subscription {
	return broker.Subscription{Topic: topic, Group: group,
		Policy: retrypolicy.Policy{MaxRetries: 30, Backoff: retrypolicy.Schedule{Delays: []time.Duration{
			100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second}}},
		Concurrency: 4, Prefetch: 16, ShutdownTimeout: 5 * time.Second}
}

// effectsHandler is the worker of the cases: for each command (its value)
// a ledger row, and, with next, the command's event to next through the
// outbox, in the inbox's transaction (without inbox: in a transaction of
// its own, the same statements); kill is called at each step. done is
// called once a delivery's transaction committed or the inbox found it
// handled (so, per delivery that will be acknowledged).
func effectsHandler(db *effectsDB, inbox bool, next string, kill func(step int, d *broker.Delivery), done func(d *broker.Delivery)) broker.Handler {
	work := func(ctx context.Context, tx pgx.Tx, d *broker.Delivery) error {
		kill(stepClaimed, d)
		if _, err := tx.Exec(ctx, `INSERT INTO `+db.schema+`.ledger (worker, command) VALUES ($1, $2)`, d.Group, string(d.Value)); err != nil {
			return err
		}
		kill(stepApplied, d)
		if next != "" {
			if err := db.store.Publish(ctx, tx, next, broker.Message{Key: d.Key, Value: d.Value}); err != nil {
				return err
			}
			kill(stepPublished, d)
		}
		return nil
	}
	var h broker.Handler
	if inbox {
		in, err := db.store.Inbox(exactlyonce.InboxConfig{})
		if err != nil {
			panic(err) // the zero InboxConfig is valid
		}
		h = in.Handler(work)
	} else {
		h = func(ctx context.Context, d *broker.Delivery) error {
			return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return work(ctx, tx, d) })
		}
	}
	return func(ctx context.Context, d *broker.Delivery) error {
		kill(stepReceived, d)
		if err := h(ctx, d); err != nil {
			return err
		}
		done(d)
		kill(stepCommitted, d)
		return nil
	}
}

// received is an effectsHandler's kill that never kills and counts each
// delivery (by command) in starts.
func received(starts *tally) func(int, *broker.Delivery) {
	return func(step int, d *broker.Delivery) {
		if step == stepReceived {
			starts.add(string(d.Value))
		}
	}
}

// doneIn is an effectsHandler's done that counts in c.
func doneIn(c *tally) func(*broker.Delivery) {
	return func(d *broker.Delivery) { c.add(string(d.Value)) }
}

// sigkill ends this process at once, the way the OOM killer or a node
// failure does: nothing flushed, nothing acknowledged.
func sigkill() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// effectsChild is the main of a childEffects process: a worker (or, with
// FAULTS_ROLE=relay, a relay) on the broker FAULTS_BROKER names, until
// SIGTERM. A worker reports each delivery it will acknowledge as a
// "crashtest done <message id>" line.
func effectsChild(ctx context.Context) error {
	b, err := childBroker(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	pool, err := pgxpool.New(ctx, os.Getenv(envDB))
	if err != nil {
		return err
	}
	defer pool.Close()
	db := &effectsDB{url: os.Getenv(envDB), schema: os.Getenv(envSchema), pool: pool}
	if db.store, err = exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: db.schema, Logger: quietLog}); err != nil {
		return err
	}
	if err := db.store.Maintain(ctx); err != nil { // the partitions the parent's Migrate made
		return err
	}
	if os.Getenv(envRole) == "relay" {
		after, _ := strconv.Atoi(os.Getenv(envKillAfter))
		relay, err := db.store.NewRelay(exactlyonce.RelayConfig{Broker: &killAfter{Broker: b, left: after}, Batch: 20,
			RebalanceInterval: 100 * time.Millisecond, Logger: quietLog})
		if err != nil {
			return err
		}
		return relay.Run(ctx)
	}
	step, _ := strconv.Atoi(os.Getenv(envKillStep))
	at := os.Getenv(envKillAt)
	var mu sync.Mutex
	report := func(what string, d *broker.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "crashtest %s %s\n", what, d.Value)
	}
	kill := func(s int, d *broker.Delivery) {
		if s == stepReceived {
			report("start", d)
		}
		if s == step && string(d.Value) == at {
			sigkill()
		}
	}
	done := func(d *broker.Delivery) { report("done", d) }
	sub := effectsSub(os.Getenv(envTopic), os.Getenv(envWorker))
	return b.Consume(ctx, sub, effectsHandler(db, os.Getenv(envNoInbox) == "", os.Getenv(envNext), kill, done))
}

// childBroker opens the broker of a child: RabbitMQ under FAULTS_PREFIX or
// Kafka at FAULTS_BROKERS (one-second group sessions, as kafkaChild).
func childBroker(ctx context.Context) (broker.Broker, error) {
	if os.Getenv(envBrokerKind) == "kafka" {
		cfg := kafkaChildConfig(strings.Split(os.Getenv(envBrokers), ","))
		return kafka.New(ctx, cfg)
	}
	return rabbit.New(ctx, rabbitConfig(os.Getenv(envPrefix)))
}

// killAfter is a relay's broker that SIGKILLs the process after its
// left-th Publish call was confirmed, before the relay records it.
type killAfter struct {
	broker.Broker
	mu   sync.Mutex
	left int
}

func (k *killAfter) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	if err := k.Broker.Publish(ctx, topic, msgs...); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.left > 0 {
		if k.left--; k.left == 0 {
			sigkill()
		}
	}
	return nil
}

// effectsRow is one case's accounting of effects.
type effectsRow struct {
	name                            string
	inbox                           bool
	commands, redelivered           int
	effects, duplicateEffects, lost int
}

// effectsTable holds the rows of the effects cases, printed after the
// suite's table.
var effectsTable struct {
	mu   sync.Mutex
	rows []effectsRow
}

// accountEffects compares the ledger of worker with the commands: each
// command applied once (lost = none, duplicate effects = the rows beyond
// one), deliveries (handler calls) beyond one counted from delivered; it records and logs
// the row. With the inbox, a duplicate or lost effect fails t; without,
// the duplicates are what the inbox saves, printed.
func accountEffects(t testing.TB, name string, inbox bool, commands []string, effects map[string]int, delivered map[string]int) effectsRow {
	t.Helper()
	r := effectsRow{name: name, inbox: inbox, commands: len(commands)}
	var lost, dup []string
	for _, c := range commands {
		n := effects[c]
		switch {
		case n == 0:
			lost = append(lost, c)
		case n > 1:
			dup = append(dup, c)
			r.duplicateEffects += n - 1
		}
		if n > 0 {
			r.effects++
		}
		if d := delivered[c]; d > 1 {
			r.redelivered += d - 1
		}
	}
	r.lost = len(lost)
	effectsTable.mu.Lock()
	effectsTable.rows = append(effectsTable.rows, r)
	effectsTable.mu.Unlock()
	with := "with the inbox"
	if !inbox {
		with = "WITHOUT the inbox"
	}
	t.Logf("%s %s: commands %d, deliveries beyond the first %d, commands applied %d, duplicate effects %d, lost %d",
		name, with, r.commands, r.redelivered, r.effects, r.duplicateEffects, r.lost)
	if r.lost > 0 {
		t.Errorf("%d commands never applied, first: %v", r.lost, lost[:min(len(lost), 5)])
	}
	if inbox && r.duplicateEffects > 0 {
		t.Errorf("effects applied more than once with the inbox: %d (commands %v)", r.duplicateEffects, dup[:min(len(dup), 5)])
	}
	return r
}

// printEffectsTable writes the effects cases' table to w (nothing when
// none ran).
func printEffectsTable(w io.Writer) {
	effectsTable.mu.Lock()
	defer effectsTable.mu.Unlock()
	if len(effectsTable.rows) == 0 {
		return
	}
	const format = "%-58s %-5v %8v %11v %8v %17v %5v\n"
	fmt.Fprintln(w, "\nEXACTLY-ONCE EFFECTS")
	fmt.Fprintf(w, format, "case", "inbox", "commands", "redelivered", "applied", "duplicate effects", "lost")
	for _, r := range effectsTable.rows {
		fmt.Fprintf(w, format, r.name, r.inbox, r.commands, r.redelivered, r.effects, r.duplicateEffects, r.lost)
	}
}

// errKilled is what waiting for a child that should kill itself reports
// when it does not.
var errKilled = errors.New("the child did not kill itself")

// waitExit waits up to timeout for child c to exit.
func (c *child) waitExit(timeout time.Duration) error {
	select {
	case <-c.exited:
		return nil
	case <-time.After(timeout):
		return errKilled
	}
}
