package rabbit_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/memstore"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// deepTable is a header table with n tables nested under its "deep" header.
func deepTable(n int) amqp.Table {
	var v any = "bottom"
	for range n {
		v = amqp.Table{"n": v}
	}
	return amqp.Table{"deep": v}
}

// longTable is a header table whose "long" header is a table of n entries.
func longTable(n int) amqp.Table {
	t := amqp.Table{}
	for i := range n {
		t[fmt.Sprint("k", i)] = nil
	}
	return amqp.Table{"long": t}
}

// undecodables are messages amqp091-go cannot decode, as another client
// publishes them (RabbitMQ takes them): told apart by their message ids.
func undecodables() []amqp.Publishing {
	return []amqp.Publishing{
		{Headers: deepTable(33), MessageId: "deep-33", ContentType: "text/plain", Body: []byte("deep")},
		{Headers: longTable(8193), MessageId: "long-8193", Body: []byte("long")},
		{Headers: amqp.Table{"array": make([]any, 8193)}, MessageId: "array-8193", Timestamp: time.Unix(1700000000, 0), Body: []byte{0xff, 0}},
	}
}

// TestUndecodableHeadersMoveAside: messages whose header table amqp091-go
// refuses (33 tables deep, a table of 8,193 entries, an array of 8,193)
// published to a worker's topic, each followed by plain messages, which a
// depth-32 one is among. Counted: every plain message is handled once,
// none of the refused ones is handed to the handler, each is dead-lettered
// once with reason undecodable and a reason a human can read, and the
// group queue ends empty. (The refused table used to close the
// consumer's connection, and the broker to hand the same message to the
// next one, forever: nothing behind it was handled.)
func TestUndecodableHeadersMoveAside(t *testing.T) {
	s := sub(testenv.Name(t))
	b := newBroker(t, nil, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	var msgs []amqp.Publishing
	const plain = 10
	for _, bad := range undecodables() {
		msgs = append(msgs, bad)
		for i := range plain {
			msgs = append(msgs, amqp.Publishing{MessageId: fmt.Sprint(bad.MessageId, "-behind-", i), Body: []byte("ok")})
		}
	}
	msgs = append(msgs, amqp.Publishing{Headers: deepTable(32), MessageId: "deep-32", Body: []byte("ok")})
	var handled testenv.Recorder[string]
	stop := testenv.Consume(t, b, s, func(_ context.Context, d *broker.Delivery) error {
		handled.Add(d.ID)
		return nil
	})
	defer stop()
	publishRaw(t, channel(t), b.Names().Topics(), s.Topic, msgs...)

	want := len(msgs) - len(undecodables())
	got := handled.WaitUntil(t, 30*time.Second, fmt.Sprintf("%d plain messages handled", want), func(ids []string) bool { return len(ids) >= want })
	q := rabbit.Queue(s.Topic, s.Group)
	entries := keep(t, b, rabbit.DLQ(q), len(undecodables()))
	stop()
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for _, m := range msgs {
		bad := !strings.Contains(m.MessageId, "-behind-") && m.MessageId != "deep-32"
		if n := count[m.MessageId]; (bad && n != 0) || (!bad && n != 1) {
			t.Errorf("%s handled %d times", m.MessageId, n)
		}
	}
	for _, bad := range undecodables() {
		e, ok := entries[bad.MessageId]
		if !ok {
			t.Errorf("%s: not dead-lettered", bad.MessageId)
			continue
		}
		checkUndecodable(t, e, bad)
		if e.Worker != s.Group || e.Source != q || e.RetryCount != 0 {
			t.Errorf("%s: entry worker %q source %q retries %d, want %q, %q, 0", bad.MessageId, e.Worker, e.Source, e.RetryCount, s.Group, q)
		}
	}
	if n := depth(t, channel(t), q); n != 0 {
		t.Errorf("%d messages left in %s", n, q)
	}
	t.Logf("published %d, handled %d, dead-lettered %d", len(msgs), len(got), len(entries))
}

// TestUndecodableDeadLettersAreKept: refused messages put straight into a
// DLQ (as a broker dead-lettering, or a foreign application, would), with
// plain dead letters before, between and behind them, read by a keeper
// into a store (the embedded one). Counted: the store holds every one of
// them once, the refused ones as entries with reason undecodable that
// keep their message id, properties and refused bytes, and the DLQ ends
// empty. (The refused table used to stop the keeper of that DLQ for
// good.)
func TestUndecodableDeadLettersAreKept(t *testing.T) {
	s := sub(testenv.Name(t))
	b := newBroker(t, nil, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	queue := rabbit.DLQ(rabbit.Queue(s.Topic, s.Group))
	var msgs []amqp.Publishing
	for i, bad := range undecodables() {
		msgs = append(msgs, amqp.Publishing{MessageId: fmt.Sprint("plain-", i), Body: []byte("plain")}, bad)
	}
	for i := range 4 {
		msgs = append(msgs, amqp.Publishing{MessageId: fmt.Sprint("behind-", i), Body: []byte("plain")})
	}
	publishRaw(t, channel(t), "", queue, msgs...)

	mem := memstore.New(memstore.Config{Logger: slog.New(slog.DiscardHandler)})
	defer mem.Close()
	st := &insertions{Store: mem}
	k, err := keeper.New(keeper.Config{Source: b, Store: st, Broker: rabbit.Name,
		DLQs: map[string]broker.Severity{queue: broker.SeverityCritical}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	stop := testenv.Background(t, "Keeper.Run", 30*time.Second, k.Run)
	st.inserted.WaitUntil(t, 30*time.Second, fmt.Sprintf("%d entries stored", len(msgs)), func(n []int) bool {
		sum := 0
		for _, k := range n {
			sum += k
		}
		return sum >= len(msgs)
	})
	stop()
	page, err := st.List(t.Context(), dlq.Query{DLQ: queue, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]driver.Entry{}
	for _, r := range page.Records {
		full, err := st.Get(t.Context(), queue, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := entries[full.Entry.MessageID]; dup {
			t.Errorf("%s stored twice", full.Entry.MessageID)
		}
		entries[full.Entry.MessageID] = full.Entry
	}
	for _, m := range msgs {
		e, ok := entries[m.MessageId]
		switch {
		case !ok:
			t.Errorf("%s: not kept", m.MessageId)
		case m.Headers != nil:
			checkUndecodable(t, e, m)
		case e.Reason == string(driver.ReasonUndecodable):
			t.Errorf("%s: a plain dead letter kept as undecodable", m.MessageId)
		}
	}
	if n := depth(t, channel(t), queue); n != 0 {
		t.Errorf("%d messages left in %s", n, queue)
	}
}

// insertions is a store that records how many entries each insert added.
type insertions struct {
	dlq.Store
	inserted testenv.Recorder[int]
}

// InsertBatch implements dlq.Store.
func (s *insertions) InsertBatch(ctx context.Context, rs []dlq.Record) ([]dlq.InsertResult, error) {
	res, err := s.Store.InsertBatch(ctx, rs)
	n := 0
	for _, r := range res {
		if r.Err == nil && r.Inserted {
			n++
		}
	}
	s.inserted.Add(n)
	return res, err
}

// keep runs the DLQ source of b on queue until it handed over n dead
// letters, and returns their entries by message id (failing t on a
// repeated id).
func keep(t *testing.T, b *rabbit.Broker, queue string, n int) map[string]driver.Entry {
	t.Helper()
	var mu sync.Mutex
	out := map[string]driver.Entry{}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- b.ConsumeDeadLetters(ctx, []string{queue}, func(_ context.Context, dl driver.DeadLetter) error {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := out[dl.Entry.MessageID]; dup {
				t.Errorf("dead letter %s handed over twice", dl.Entry.MessageID)
			}
			out[dl.Entry.MessageID] = dl.Entry
			if len(out) == n {
				close(done)
			}
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("%d of %d dead letters of %s handed over", len(out), n, queue)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("ConsumeDeadLetters = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return out
}

// checkUndecodable checks the entry of refused message m: reason and class
// undecodable, an error that says why, its body, message id and
// properties, no string headers, and its refused bytes in the wire form.
func checkUndecodable(t *testing.T, e driver.Entry, m amqp.Publishing) {
	t.Helper()
	if e.Reason != string(driver.ReasonUndecodable) || e.ErrorClass != driver.ClassUndecodable ||
		!strings.Contains(e.ErrorMessage, "headers") || !strings.Contains(e.ErrorMessage, "32") && !strings.Contains(e.ErrorMessage, "8192") {
		t.Errorf("%s: reason %q class %q error %q; want undecodable, saying why", m.MessageId, e.Reason, e.ErrorClass, e.ErrorMessage)
	}
	if string(e.OriginalValue) != string(m.Body) || len(e.OriginalHeaders) != 0 {
		t.Errorf("%s: body %q headers %q; want %q and none", m.MessageId, e.OriginalValue, e.OriginalHeaders, m.Body)
	}
	f, err := wire.Decode(e.OriginalWire)
	if err != nil {
		t.Fatalf("%s: wire form: %v", m.MessageId, err)
	}
	raw, _ := f.Headers.Get(rabbit.HeaderUndecodableRaw)
	size, _ := f.Headers.Get(rabbit.HeaderUndecodableSize)
	if b, ok := raw.([]byte); !ok || len(b) == 0 || size == nil || size.(int64) < int64(len(b)) {
		t.Errorf("%s: refused bytes %T (%d of %v)", m.MessageId, raw, len(fmt.Sprint(raw)), size)
	}
	if p := f.Props; p == nil || p.ContentType != m.ContentType || !p.Timestamp.Equal(m.Timestamp) {
		t.Errorf("%s: properties %+v, want those published", m.MessageId, f.Props)
	}
}
