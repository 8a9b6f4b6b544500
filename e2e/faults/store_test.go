//go:build faults

package faults

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// storeOutage is TestStoreUnreachable on broker b (kind: "rabbitmq"
// or "kafka") whose dead letters of sub go to dlqName.
func storeOutage(t *testing.T, b broker.Broker, kind, dlqName string, sub broker.Subscription) {
	u, err := url.Parse(testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatalf("DATABASE_URL: %v", err)
	}
	px := tcpproxy.New(t, u.Host)
	viaProxy := *u
	viaProxy.Host = px.Addr()
	schema := "faults_" + broker.NewMessageID()[:12]
	st := &counting{Store: openStore(t, viaProxy.String(), schema), changed: make(chan struct{})}
	direct := openStore(t, testenv.PostgreSQL.URL(), schema) // the same tables, not through the proxy

	px.SetUp(false)
	defer px.SetUp(true)
	runKeeper(t, b, kind, st, dlqName)

	published := ids(sub.Topic, 200)
	c := newTally()
	stop := testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		if n, _ := strconv.Atoi(d.ID[strings.LastIndexByte(d.ID, '-')+1:]); n%2 == 1 {
			return broker.Permanent(errors.New("faults: odd message"))
		}
		c.add(d.ID)
		return nil
	})
	publishAll(t, b, sub.Topic, published, nil)
	if !c.wait(len(published)/2, time.Minute) {
		t.Errorf("%d of %d even messages handled", c.distinct(), len(published)/2)
	}
	time.Sleep(2 * time.Second) // the outage: the keeper keeps failing to store
	if n, err := direct.Count(context.Background(), dlq.Query{DLQ: dlqName}); err != nil || n != 0 {
		t.Errorf("during the outage the store holds %d entries (%v), want 0", n, err)
	}
	px.SetUp(true)
	t.Logf("PostgreSQL reachable again")
	st.wait(t, dlqName, int64(len(published)/2), time.Minute)
	stop()
	account(t, published, c.counts(), stored(t, direct, dlqName))
}

// openStore opens the PostgreSQL store of schema at dbURL, dropping the
// schema when t ends.
func openStore(t testing.TB, dbURL, schema string) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), dbURL, pgstore.Config{Schema: schema, MaxConns: 4,
		Logger: slog.New(slog.DiscardHandler), ConnectTimeout: 5 * time.Second})
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	t.Cleanup(func() {
		_ = st.Close()
		testenv.DropSchema(t, schema)
	})
	return st
}

// stored counts the records of dlqName in st by message id.
func stored(t testing.TB, st dlq.Store, dlqName string) map[string]int {
	t.Helper()
	out := map[string]int{}
	q := dlq.Query{DLQ: dlqName, Limit: dlq.MaxLimit}
	for {
		page, err := st.List(context.Background(), q)
		if err != nil {
			t.Fatalf("list %s: %v", dlqName, err)
		}
		for _, r := range page.Records {
			out[r.Entry.MessageID]++
		}
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}

// counting wraps a store to wake waiters on every insert.
type counting struct {
	dlq.Store
	mu      sync.Mutex
	changed chan struct{}
}

// Insert implements dlq.Store.
func (c *counting) Insert(ctx context.Context, r dlq.Record) (dlq.Record, bool, error) {
	stored, inserted, err := c.Store.Insert(ctx, r)
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return stored, inserted, err
}

// InsertBatch implements dlq.Store: the keeper's path.
func (c *counting) InsertBatch(ctx context.Context, rs []dlq.Record) ([]dlq.InsertResult, error) {
	res, err := c.Store.InsertBatch(ctx, rs)
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return res, err
}

// wait waits until dlqName holds at least n records, failing t after
// timeout.
func (c *counting) wait(t testing.TB, dlqName string, n int64, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		got, err := c.Count(context.Background(), dlq.Query{DLQ: dlqName})
		if err == nil && got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Errorf("%s holds %d records (%v) after %s, want %d", dlqName, got, err, timeout, n)
			return
		}
	}
}

// runKeeper runs a DLQ keeper of dlqName from b into st until t ends.
func runKeeper(t testing.TB, b broker.Broker, kind string, st dlq.Store, dlqName string) {
	t.Helper()
	src, ok := b.(dlq.Source)
	if !ok {
		t.Fatalf("%s broker does not implement dlq.Source", kind)
	}
	k, err := keeper.New(keeper.Config{Source: src, Store: st, Broker: string(kind),
		DLQs: map[string]broker.Severity{dlqName: broker.SeverityCritical}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("keeper.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("keeper: %v", err)
		}
	})
}
