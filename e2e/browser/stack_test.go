package browser

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/kafka"
	"github.com/redrive/redrive/broker/kafka/kafkatest"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/dlq/console"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/lag"
)

const (
	topic         = "payments"
	group         = "payout-executor"
	operatorToken = "operator-token-for-the-browser-test"
	viewerToken   = "viewer-token-for-the-browser-test"
)

// stack is redrive serve in one process: broker, worker, keeper, store,
// ops, heartbeats, lag and the admin server with the console.
type stack struct {
	url      string
	dlq      string
	store    dlq.Store
	srv      *admin.Server
	broker   *kafka.Broker
	stored   chan dlq.Record       // every dead letter the keeper stored
	replayed chan string           // x-redrive-replayed-from of every replay the worker handled
	samplers func(context.Context) // takes a heartbeat and a lag sample
}

func logger() *slog.Logger {
	if os.Getenv("REDRIVE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newStack starts the stack; everything stops when t ends.
func newStack(t *testing.T) *stack {
	t.Helper()
	log := logger()
	brokers := kafkatest.Cluster(t)
	b := kafkatest.New(t, brokers, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() }) // before the broker closes
	run := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}

	sub := broker.Subscription{Topic: topic, Group: group, DLQ: broker.DLQOptions{Severity: broker.SeverityCritical}}
	if err := b.Declare(ctx, sub); err != nil {
		t.Fatalf("declare: %v", err)
	}
	s := &stack{dlq: kafka.DLQTopic(topic), broker: b, stored: make(chan dlq.Record, 100), replayed: make(chan string, 100)}

	// Heartbeats in Redis, under a prefix of this run.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		testenv.Redis.Fail(t, err)
	}
	prefix := "redrive-browser-" + broker.NewMessageID()[:10] + ":"
	beat, err := heartbeat.NewPublisher(rdb, heartbeat.PublisherConfig{Type: group, Instance: group + "-1", Prefix: prefix, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	stopping, err := heartbeat.NewPublisher(rdb, heartbeat.PublisherConfig{Type: group, Instance: group + "-2", Prefix: prefix, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = beat.Deregister(context.Background())
		_ = stopping.Deregister(context.Background())
	})
	mon, err := heartbeat.NewMonitor(rdb, heartbeat.MonitorConfig{Prefix: prefix,
		LagThresholds: map[string]heartbeat.LagThreshold{group: {Warning: 100, Critical: 500}}})
	if err != nil {
		t.Fatal(err)
	}
	workers, err := heartbeat.NewSampler(mon, heartbeat.SamplerConfig{Logger: log})
	if err != nil {
		t.Fatal(err)
	}

	// Lag of the worker's group.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	lk, err := kafka.NewLagMonitor(cl, kafka.LagConfig{Groups: []string{group}})
	if err != nil {
		t.Fatal(err)
	}
	lags, err := lag.NewSampler(lag.SamplerConfig{Monitor: lk, Source: kafka.Name, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.samplers = func(ctx context.Context) {
		t.Helper()
		if err := beat.Beat(ctx); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		if err := stopping.Shutdown(ctx); err != nil {
			t.Fatalf("heartbeat shutdown: %v", err)
		}
		if err := workers.Sample(ctx); err != nil {
			t.Fatalf("heartbeat sample: %v", err)
		}
		if err := lags.Sample(ctx); err != nil {
			t.Fatalf("lag sample: %v", err)
		}
	}

	// The worker: poison messages fail permanently, replays succeed.
	run("worker", func(ctx context.Context) error {
		return b.Consume(ctx, sub, func(ctx context.Context, d *broker.Delivery) error {
			beat.MessageHandled(time.Now())
			if from := d.Headers[broker.HeaderReplayedFrom]; from != "" {
				s.replayed <- from
				return nil
			}
			if strings.Contains(string(d.Value), "poison") {
				return broker.Permanent(&BankError{Code: "AC04", Msg: "bank rejected transfer: account closed"})
			}
			return nil
		})
	})

	// The keeper, into the embedded store.
	s.store = memstore.New(memstore.Config{Logger: log})
	t.Cleanup(func() { _ = s.store.Close() })
	k, err := keeper.New(keeper.Config{Source: b, Store: s.store, Broker: kafka.Name, Logger: log,
		DLQs: map[string]broker.Severity{s.dlq: broker.SeverityCritical},
		Hook: dlq.HookFunc(func(_ context.Context, r dlq.Record) error { s.stored <- r; return nil })})
	if err != nil {
		t.Fatal(err)
	}
	run("keeper", k.Run)

	// Ops, the admin API and the console.
	ops, err := operate.New(operate.Config{Store: s.store, Republisher: b, Logger: log, Routes: []dlq.Route{kafka.Route(topic, group)},
		Policies: map[string]dlq.Policy{s.dlq: {Severity: broker.SeverityCritical}}})
	if err != nil {
		t.Fatal(err)
	}
	// The console needs the server (its replay-all jobs) and the server
	// the console (its UI): a forwarding handler breaks the cycle.
	var ui http.Handler
	s.srv, err = admin.New(admin.Config{Ops: ops, Listen: "127.0.0.1:0", Logger: log,
		Tokens: []admin.Token{{Name: "api", Secret: "api-token-for-the-browser-test"}},
		UI:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ui.ServeHTTP(w, r) })})
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Config{Ops: ops, Jobs: s.srv.Jobs(), Workers: workers, Lag: lags, Broker: kafka.Name, Logger: log,
		Users: []console.User{{Name: "alice", Token: operatorToken}, {Name: "victor", Token: viewerToken, ReadOnly: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ui = c.Handler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.url = "http://" + ln.Addr().String()
	run("admin server", func(ctx context.Context) error { return s.srv.Serve(ctx, ln) })
	return s
}

// BankError is the worker's failure, so that the entries show an error
// class.
type BankError struct{ Code, Msg string }

func (e *BankError) Error() string { return "payout: " + e.Msg + " (" + e.Code + ")" }

// ErrorClass names the class in the dead letter.
func (e *BankError) ErrorClass() string { return "payout.BankError" }

// publish sends messages to the worker's topic.
func (s *stack) publish(t *testing.T, values ...string) {
	t.Helper()
	msgs := make([]broker.Message, len(values))
	for i, v := range values {
		msgs[i] = broker.Message{Key: []byte("deal-" + strconv.Itoa(i)), Value: []byte(v),
			Headers: map[string]string{"content-type": "application/json", "trace-id": "trace-" + strconv.Itoa(i)}}
	}
	if err := s.broker.Publish(context.Background(), topic, msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}
