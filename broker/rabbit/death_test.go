package rabbit

import (
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// attuneDeaths is the x-death of a message published to attune.executions
// that expired in attune.executions.q, was dead-lettered through
// attune.dlx into attune.retry.q, and was rejected there: RabbitMQ lists
// the latest first.
func attuneDeaths(first, last time.Time) []any {
	return []any{
		amqp.Table{"queue": "attune.retry.q", "reason": "rejected", "count": int64(2), "exchange": "attune.dlx",
			"routing-keys": []any{"execution.requested"}, "time": last},
		amqp.Table{"queue": "attune.executions.q", "reason": "expired", "count": int64(1), "exchange": "attune.executions",
			"routing-keys": []any{"execution.requested", "cc.audit"}, "time": first, "original-expiration": "500"},
	}
}

// A broker-dead-lettered message's entry tells the whole x-death story:
// the latest death gives the reason, the queue and the time, the oldest
// the first failure, and the error message names each queue, reason,
// count, time, exchange and routing keys; the x-death table is kept with
// its types after the application's headers, out of the string view.
func TestEntryTellsTheDeathStory(t *testing.T) {
	first, last := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC), time.Date(2025, 1, 15, 10, 31, 0, 0, time.UTC)
	m := amqp.Delivery{Headers: amqp.Table{"tenant": "acme", "x-death": attuneDeaths(first, last),
		"x-first-death-exchange": "attune.executions", "x-first-death-queue": "attune.executions.q", "x-first-death-reason": "expired"},
		MessageId: "exec-1", Body: []byte(`{"execution":1}`)}
	e := EntryFromDelivery(m)
	if e.Reason != string(driver.ReasonRejected) || e.Source != "attune.retry.q" || e.OriginalTopic != "execution.requested" ||
		!e.LastFailureAt.Equal(last) || !e.FirstFailureAt.Equal(first) || e.Worker != "" {
		t.Errorf("entry = reason %q source %q topic %q worker %q, failures %v..%v", e.Reason, e.Source, e.OriginalTopic, e.Worker, e.FirstFailureAt, e.LastFailureAt)
	}
	for _, want := range []string{
		`from queue attune.retry.q: rejected (2 times, 2025-01-15T10:31:00Z; published to exchange "attune.dlx" with routing keys ["execution.requested"])`,
		`before that from queue attune.executions.q: expired (1 time, 2025-01-15T10:30:00Z; published to exchange "attune.executions" with routing keys ["execution.requested" "cc.audit"])`,
	} {
		if !strings.Contains(e.ErrorMessage, want) {
			t.Errorf("error message %q lacks %q", e.ErrorMessage, want)
		}
	}
	f, err := wire.Decode(e.OriginalWire)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range f.Headers {
		names = append(names, h.Name)
	}
	if got := strings.Join(names, " "); got != "tenant x-death x-first-death-exchange x-first-death-queue x-first-death-reason" {
		t.Errorf("wire headers %q, want the application's, then the broker's", got)
	}
	if len(e.OriginalHeaders) != 1 || e.OriginalHeaders["tenant"] != "acme" {
		t.Errorf("string view %q, want the application's header only", e.OriginalHeaders)
	}
	if d, ok := firstDeath(e); !ok || d.Exchange != "attune.executions" || d.Count != 1 || d.RoutingKeys[0] != "execution.requested" {
		t.Errorf("first death = %+v, %v", d, ok)
	}
}

// A foreign DLQ replays to the operator's exchange and routing key, or
// where its oldest x-death says the message was published, among the
// exchanges the operator allows; never anywhere else.
func TestForeignRoute(t *testing.T) {
	fixed := ForeignRoute("legacy.dlq", ForeignTarget{Exchange: "legacy", RoutingKey: "jobs.retry"})
	if !fixed.Foreign || fixed.Exchange != "legacy" || fixed.Target != "jobs.retry" || !fixed.Resolved() {
		t.Errorf("fixed route = %+v", fixed)
	}
	if d := fixed.Destination(Name); d != `exchange legacy, routing key "jobs.retry" (every queue it routes to)` {
		t.Errorf("fixed destination = %q", d)
	}

	rt := ForeignRoute("attune.dlx.queue", ForeignTarget{XDeathExchanges: []string{"attune.executions", "attune.jobs"}})
	if d := rt.Destination(Name); d != "the exchange x-death names (one of attune.executions, attune.jobs), with its routing key" {
		t.Errorf("unresolved destination = %q", d)
	}
	entry := func(h amqp.Table) driver.Entry {
		return EntryFromDelivery(amqp.Delivery{Headers: h, Body: []byte("x")})
	}
	now := time.Now()
	got, err := rt.Resolve(entry(amqp.Table{"x-death": attuneDeaths(now, now)}))
	if err != nil || got.Exchange != "attune.executions" || got.Target != "execution.requested" || !got.Resolved() {
		t.Fatalf("resolved = %+v, %v", got, err)
	}
	if d := got.Destination(Name); d != `exchange attune.executions, routing key "execution.requested" (every queue it routes to)` {
		t.Errorf("resolved destination = %q", d)
	}
	for name, e := range map[string]driver.Entry{
		"no x-death":       entry(amqp.Table{"a": "b"}),
		"x-death a string": entry(amqp.Table{"x-death": "attune.executions"}),
		"exchange not allowed": entry(amqp.Table{"x-death": []any{amqp.Table{"queue": "q", "reason": "expired", "exchange": "amq.topic",
			"routing-keys": []any{"execution.requested"}}}}),
		"no routing key": entry(amqp.Table{"x-death": []any{amqp.Table{"queue": "q", "reason": "expired", "exchange": "attune.jobs"}}}),
		"no wire form":   {Reason: "expired"},
	} {
		if got, err := rt.Resolve(e); !errors.Is(err, driver.ErrOriginMismatch) {
			t.Errorf("%s: resolved to %+v, %v; want an origin mismatch", name, got, err)
		}
	}
}

// A hostile x-death (64 deaths of 16 long routing keys each) makes a
// bounded error message; the whole table stays in the wire form.
func TestDeathMessageBounded(t *testing.T) {
	keys := make([]any, 16)
	for i := range keys {
		keys[i] = strings.Repeat("k", 255)
	}
	deaths := make([]any, 64)
	for i := range deaths {
		deaths[i] = amqp.Table{"queue": strings.Repeat("q", 255), "reason": "expired", "count": int64(i), "exchange": strings.Repeat("e", 255), "routing-keys": keys}
	}
	e := EntryFromDelivery(amqp.Delivery{Headers: amqp.Table{"x-death": deaths}})
	if n := len(e.ErrorMessage); n > 16<<10 || !strings.HasSuffix(e.ErrorMessage, "and 56 earlier deaths (see x-death)") || !strings.Contains(e.ErrorMessage, " +12])") {
		t.Errorf("error message of %d bytes: %.300q…", n, e.ErrorMessage)
	}
	f, err := wire.Decode(e.OriginalWire)
	if err != nil || len(f.Headers) != 1 || len(f.Headers[0].Value.([]any)) != 64 {
		t.Errorf("wire form = %v, %v; want the whole x-death", len(f.Headers), err)
	}
}
