package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/operate"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// RunDLQ runs the dead-letter operations scenarios against env: the keeper
// on the backend's DLQs, the PostgreSQL store, replay and discard.
func RunDLQ(t *testing.T, env Env) {
	s := &suite{env: env, r: env.Resolution}
	t.Run("StoreReplayDiscard", s.storeReplayDiscard)
	t.Run("ReplayAll", s.replayAll)
	t.Run("KeeperRestartLosesNothing", s.keeperRestart)
	t.Run("TwoKeepers", s.twoKeepers)
	t.Run("StoreOutageBackPressure", s.storeOutage)
	t.Run("ExecutionsHook", s.executionsHook)
}

// store opens a PostgreSQL store in a schema of its own, dropped at the
// end; dbURL may point through a proxy.
func (s *suite) store(t *testing.T, dbURL, schema string) *pgstore.Store {
	t.Helper()
	if schema == "" {
		schema = "e2e_" + broker.NewMessageID()[:12]
	}
	st, err := pgstore.Open(t.Context(), dbURL, pgstore.Config{Schema: schema, MaxConns: 4, Logger: quietLogger(),
		ConnectTimeout: 5 * time.Second})
	if err != nil {
		testenv.PostgreSQL.Fail(t, err)
	}
	t.Cleanup(func() {
		_ = st.Close()
		testenv.DropSchema(t, schema)
	})
	return st
}

// dlqStore opens the store of one case: Env.Store's, else PostgreSQL's.
func (s *suite) dlqStore(t *testing.T) dlq.Store {
	t.Helper()
	if s.env.Store != nil {
		return s.env.Store(t)
	}
	return s.store(t, testenv.PostgreSQL.URL(), "")
}

// counting wraps a store to wake waiters on every insert.
type counting struct {
	dlq.Store
	mu      sync.Mutex
	changed chan struct{}
}

func newCounting(st dlq.Store) *counting { return &counting{Store: st, changed: make(chan struct{})} }

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

// waitStored waits until dlqName holds at least n entries (any status)
// and returns how many it holds.
func (c *counting) waitStored(t *testing.T, dlqName string, n int64, timeout time.Duration) int64 {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		got, err := c.Count(t.Context(), dlq.Query{DLQ: dlqName})
		if err == nil && got >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s holds %d entries after %s, want %d (last error %v)", dlqName, got, timeout, n, err)
		}
	}
}

// waitAll waits until dlqName holds all n entries and fails the test when
// it holds more (a dead letter stored twice).
func (c *counting) waitAll(t *testing.T, dlqName string, n int64, timeout time.Duration) {
	t.Helper()
	if got := c.waitStored(t, dlqName, n, timeout); got != n {
		t.Fatalf("%s holds %d entries, want %d: a dead letter was stored twice", dlqName, got, n)
	}
}

// keeper runs a keeper on the broker's DLQs of (topic, group) until the
// returned stop is called.
func (s *suite) keeper(t *testing.T, b broker.Broker, st dlq.Store, dlqName string, hook dlq.Hook) (stop func()) {
	t.Helper()
	src, ok := b.(dlq.Source)
	if !ok {
		t.Fatalf("%s broker does not implement dlq.Source", s.env.Name)
	}
	k, err := keeper.New(keeper.Config{Source: src, Store: st, Broker: s.env.Name,
		DLQs: map[string]broker.Severity{dlqName: broker.SeverityCritical}, Hook: hook, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("keeper.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("keeper: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// ops returns Ops replaying to the routes of the given workers (topic,
// group pairs) of the backend.
func (s *suite) ops(t *testing.T, b broker.Broker, st dlq.Store, workers ...[2]string) *operate.Ops {
	t.Helper()
	rp, ok := b.(dlq.Republisher)
	if !ok {
		t.Fatalf("%s broker does not implement dlq.Republisher", s.env.Name)
	}
	var routes []dlq.Route
	for _, w := range workers {
		routes = append(routes, s.env.Router.Route(w[0], w[1]))
	}
	o, err := operate.New(operate.Config{Store: st, Republisher: rp, Logger: quietLogger(), Routes: routes})
	if err != nil {
		t.Fatalf("operate.New: %v", err)
	}
	return o
}

// failFirstLife fails permanently unless the message is a replay.
func failFirstLife(d *broker.Delivery) error {
	if d.Headers[broker.HeaderReplayedFrom] == "" {
		return broker.Permanent(failing("cannot process %s", d.ID))
	}
	return nil
}

// storeReplayDiscard: a failing worker's message reaches the store with
// its context; replay brings it back byte-exact and it is handled; discard
// writes the audit row.
func (s *suite) storeReplayDiscard(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "payer", retrypolicy.Policy{})
	declare(t, b, sub)
	st := newCounting(s.dlqStore(t))
	name := s.env.DLQName(topic, "payer")
	s.keeper(t, b, st, name, nil)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("payer", 1, failFirstLife))

	binary := []byte{0x00, 0xff, 0xfe, '\n', 0x80}
	pretty := []byte("{\n  \"amount\": 10,\n  \"note\": \"caf\u00e9\"\n}\n")
	publish(t, b, topic,
		broker.Message{ID: "bin", Key: []byte("deal-1"), Value: binary, Headers: map[string]string{"tenant": "acme", "bytes": "\x01\x02"}},
		broker.Message{ID: "json", Key: []byte("deal-2"), Value: pretty, Headers: map[string]string{"tenant": "globex"}})
	st.waitAll(t, name, 2, 60*time.Second)

	o := s.ops(t, b, st, [2]string{topic, "payer"})
	page, err := o.List(t.Context(), dlq.Query{DLQ: name})
	if err != nil || len(page.Records) != 2 {
		t.Fatalf("List = %d records, %v; want 2", len(page.Records), err)
	}
	byMsg := map[string]dlq.Record{}
	for _, r := range page.Records {
		full, err := st.Get(t.Context(), name, r.ID) // listings are brief
		if err != nil {
			t.Fatal(err)
		}
		byMsg[r.Entry.MessageID] = full
	}
	bin := byMsg["bin"]
	if e := bin.Entry; !bytes.Equal(e.OriginalValue, binary) || string(e.OriginalKey) != "deal-1" ||
		e.OriginalHeaders["tenant"] != "acme" || e.OriginalHeaders["bytes"] != "\x01\x02" ||
		e.Reason != string(driver.ReasonPermanent) || e.Worker != "payer" || e.ErrorClass != "e2e.Failing" ||
		e.ErrorMessage != "cannot process bin" || e.OriginalTopic != topic || bin.Status != dlq.StatusPending {
		t.Fatalf("stored entry lacks context: %+v (status %s)", e, bin.Status)
	}

	if _, err := o.Replay(t.Context(), name, bin.ID, "e2e-operator"); err != nil {
		t.Fatalf("Replay: %v", err)
	}
	calls := rec.WaitUntil(t, 30*time.Second, "the replayed message to be handled", func(c []call) bool {
		return successes(c, "payer")["bin"] == 1
	})
	for _, c := range callsOf(calls, "payer", "bin") {
		if c.err != nil {
			continue
		}
		if !bytes.Equal(c.d.Value, binary) || string(c.d.Key) != "deal-1" || c.d.Headers["tenant"] != "acme" ||
			c.d.Headers["bytes"] != "\x01\x02" || c.d.Attempt != 1 || c.d.Headers[broker.HeaderReplayedFrom] != dlq.ReplayedFrom(name, bin.ID) {
			t.Fatalf("replayed delivery = value %q key %q headers %v attempt %d", c.d.Value, c.d.Key, c.d.Headers, c.d.Attempt)
		}
	}
	got, audit, err := o.Show(t.Context(), name, bin.ID)
	if err != nil || got.Status != dlq.StatusReplayed || len(audit) == 0 || audit[len(audit)-1].Action != dlq.ActionReplay ||
		audit[len(audit)-1].Actor != "e2e-operator" {
		t.Fatalf("after replay: status %s audit %+v err %v", got.Status, audit, err)
	}

	js := byMsg["json"]
	if !bytes.Equal(js.Entry.OriginalValue, pretty) {
		t.Fatalf("pretty JSON stored as %q", js.Entry.OriginalValue)
	}
	if _, err := o.Discard(t.Context(), name, js.ID, "e2e-operator", "duplicate of deal-1"); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	if _, err := o.Discard(t.Context(), name, js.ID, "e2e-operator", "again"); !errors.Is(err, dlq.ErrNotPending) {
		t.Fatalf("second Discard = %v, want ErrNotPending", err)
	}
	_, audit, _ = o.Show(t.Context(), name, js.ID)
	if len(audit) != 1 || audit[0].Action != dlq.ActionDiscard || audit[0].Reason != "duplicate of deal-1" {
		t.Fatalf("discard audit = %+v", audit)
	}
	if n := successes(rec.Snapshot(), "payer")["json"]; n != 0 {
		t.Fatalf("discarded message handled %d times", n)
	}
}

// replayAll: 1,000 dead letters, replayed each exactly once.
func (s *suite) replayAll(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "payer", retrypolicy.Policy{})
	sub.Concurrency = 8
	declare(t, b, sub)
	st := newCounting(s.dlqStore(t))
	name := s.env.DLQName(topic, "payer")
	s.keeper(t, b, st, name, nil)
	rec := newRecorder()
	testenv.Consume(t, b, sub, rec.handler("payer", 1, failFirstLife))
	const n = 1000
	msgs := messages("ra", n)
	for i := 0; i < n; i += 250 {
		publish(t, b, topic, msgs[i:i+250]...)
	}
	st.waitAll(t, name, n, 120*time.Second)
	p, err := s.ops(t, b, st, [2]string{topic, "payer"}).ReplayAll(t.Context(), dlq.Query{DLQ: name}, operate.ReplayAllOptions{Actor: "e2e"})
	if err != nil || p.Replayed != n {
		t.Fatalf("ReplayAll = %+v, %v; want %d replayed", p, err, n)
	}
	calls := rec.WaitUntil(t, 120*time.Second, "every replay handled", func(c []call) bool {
		return len(successes(c, "payer")) == n
	})
	dups := 0
	for _, c := range successes(calls, "payer") {
		dups += c - 1
	}
	t.Logf("%s replay-all: %d entries replayed, %d handled, %d duplicates", s.env.Name, p.Replayed, len(successes(calls, "payer")), dups)
	if dups != 0 {
		t.Errorf("%d replays handled more than once", dups)
	}
	left, _ := st.Count(t.Context(), dlq.Query{DLQ: name, Status: dlq.StatusPending})
	if left != 0 {
		t.Errorf("%d entries still pending after replay-all", left)
	}
}

// keeperRestart: a keeper stopped mid-stream loses nothing; its successor
// stores the rest, each once.
func (s *suite) keeperRestart(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "payer", retrypolicy.Policy{})
	sub.Concurrency = 8
	declare(t, b, sub)
	st := newCounting(s.dlqStore(t))
	name := s.env.DLQName(topic, "payer")
	stop := s.keeper(t, b, st, name, nil)
	testenv.Consume(t, b, sub, newRecorder().handler("payer", 1, failFirstLife))
	const n = 400
	publish(t, b, topic, messages("kr", n)...)
	st.waitStored(t, name, 50, 60*time.Second) // mid-stream: at least 50
	stop()
	mid, _ := st.Count(t.Context(), dlq.Query{DLQ: name})
	s.keeper(t, b, st, name, nil)
	st.waitAll(t, name, n, 120*time.Second)
	t.Logf("%s keeper restart: %d stored before the stop, %d after restart, none lost or doubled", s.env.Name, mid, n)
}

// twoKeepers: keepers scaled out on one DLQ store every dead letter
// exactly once.
func (s *suite) twoKeepers(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "payer", retrypolicy.Policy{})
	sub.Concurrency = 8
	declare(t, b, sub)
	st := newCounting(s.dlqStore(t))
	name := s.env.DLQName(topic, "payer")
	s.keeper(t, b, st, name, nil)
	s.keeper(t, s.broker(t), st, name, nil) // a second process: its own connection
	testenv.Consume(t, b, sub, newRecorder().handler("payer", 1, failFirstLife))
	const n = 300
	publish(t, b, topic, messages("tk", n)...)
	st.waitAll(t, name, n, 120*time.Second)
	time.Sleep(5 * s.r) // a straggler duplicate would show now
	if got, _ := st.Count(t.Context(), dlq.Query{DLQ: name}); got != n {
		t.Fatalf("two keepers stored %d entries, want %d", got, n)
	}
}

// storeOutage: with PostgreSQL unreachable nothing is acknowledged; once it
// returns every dead letter is stored, once.
func (s *suite) storeOutage(t *testing.T) {
	if s.env.Store != nil {
		t.Skip("the store outage cuts PostgreSQL off behind a proxy: Env.Store is another store")
	}
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "payer", retrypolicy.Policy{})
	declare(t, b, sub)
	u, err := url.Parse(testenv.PostgreSQL.URL())
	if err != nil {
		t.Fatalf("DATABASE_URL: %v", err)
	}
	px := tcpproxy.New(t, u.Host)
	viaProxy := *u
	viaProxy.Host = px.Addr()
	schema := "e2e_" + broker.NewMessageID()[:12]
	st := newCounting(s.store(t, viaProxy.String(), schema))
	direct := s.store(t, testenv.PostgreSQL.URL(), schema) // the same tables, not through the proxy
	name := s.env.DLQName(topic, "payer")

	px.SetUp(false)
	s.keeper(t, b, st, name, nil)
	testenv.Consume(t, b, sub, newRecorder().handler("payer", 1, failFirstLife))
	const n = 50
	publish(t, b, topic, messages("so", n)...)
	time.Sleep(20 * s.r) // the outage: the keeper keeps failing to store
	if got, err := direct.Count(t.Context(), dlq.Query{DLQ: name}); err != nil || got != 0 {
		t.Fatalf("during the outage the store holds %d entries (%v), want 0", got, err)
	}
	px.SetUp(true)
	st.waitAll(t, name, n, 120*time.Second)
	if got, _ := direct.Count(t.Context(), dlq.Query{DLQ: name}); got != n {
		t.Fatalf("after the outage the store holds %d entries, want %d", got, n)
	}
}

// executionsHook: the seed's dead-letter hook marks an execution whose
// message expired in the worker's queue failed, unless it is already
// terminal; a missing execution is fine; a database error is retried.
func (s *suite) executionsHook(t *testing.T) {
	b := s.broker(t)
	topic := topicName(t)
	sub := s.sub(topic, "deadline-worker", retrypolicy.Policy{MaxRetries: 3})
	sub.MaxAge = 3 * s.r
	declare(t, b, sub)
	st := newCounting(s.dlqStore(t))
	db := newExecutionsDB(t)
	// The reference design's execution ids are numbers; string ids parse
	// too. Keys differ from ids, so that only the payload names them.
	db.insert(t, "1001", "running")
	db.insert(t, "exec-running", "running")
	db.insert(t, "1002", "succeeded")
	db.breakTable(t) // the first hook calls hit a database error

	name := s.env.DLQName(topic, "deadline-worker")
	hook := &ExecutionsHook{DB: db.pool, Table: db.table}
	s.keeper(t, b, st, name, hook)
	for i, payload := range []string{`{"execution_id": 1001}`, `{"execution_id": "exec-running"}`, `{"execution_id": 1002}`, `{"execution_id": 1003}`} {
		key := fmt.Sprintf("deal-%d", i)
		publish(t, b, topic, broker.Message{ID: key, Key: []byte(key), Value: []byte(payload)})
	}
	time.Sleep(2 * sub.MaxAge) // the worker is down longer than its queue TTL
	testenv.Consume(t, b, sub, newRecorder().handler("deadline-worker", 1, nil))
	hook.waitCalls(t, 2, 60*time.Second) // the keeper retries a failing hook, not acking meanwhile
	db.repairTable(t)
	st.waitAll(t, name, 4, 60*time.Second)
	for _, id := range []string{"1001", "exec-running"} {
		db.waitStatus(t, id, "failed", 60*time.Second)
		f := db.failure(t, id)
		if f["error"] != "Worker queue TTL expired" || f["worker"] != "deadline-worker" || f["dlq"] != name || f["entry"] == "" {
			t.Errorf("execution %s failed with %v, want the queue-TTL reason, worker deadline-worker, DLQ %s and the entry id", id, f, name)
		}
	}
	if got := db.status(t, "1002"); got != "succeeded" {
		t.Errorf("terminal execution changed to %q", got)
	}
	if f := db.failure(t, "1002"); f != nil {
		t.Errorf("terminal execution got an error: %v", f)
	}
}
