package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// TestForeignRabbitMQ (issue 40): for each delay mode (route, hops) and
// each seed (foreignSeeds), messages generated as other clients publish
// them (genRabbit: no headers, an empty table, no properties, empty and
// non-UTF-8 bodies, deep and huge JSON, every AMQP type, tables to and past
// amqp091-go's limits) are published raw to a worker's topic and sent down
// every path: handled, retried through the delay tiers, handed back,
// delayed by their own x-remaining-delay, expired by their own
// expiration, dead-lettered, kept, listed, replayed, or refused (those the
// client cannot decode). Counted: published = handled + dead-lettered +
// parked (none), each replayable entry replayed and handled once, the
// undecodable ones refused, every queue empty at the end; the handler, the
// store and the replay see the body, the headers (with their AMQP types in
// the store) and the properties as published.
func TestForeignRabbitMQ(t *testing.T) {
	seeds := foreignSeeds(t)
	for _, mode := range []string{rabbit.DelayRoute, rabbit.DelayHops} {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", mode, seed), func(t *testing.T) { foreignRabbit(t, mode, seed) })
		}
	}
}

// rabbitView is the handler's string view of headers h as published:
// what the consumer's string view holds, redrive's own aside.
func rabbitView(h amqp.Table) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if wire.Own(k) {
			continue
		}
		if d, ok := v.(amqp.Decimal); ok {
			v = wire.Decimal{Scale: d.Scale, Value: d.Value}
		}
		if s, ok := wire.Text(v); ok {
			out[k] = s
		}
	}
	return out
}

func foreignRabbit(t *testing.T, mode string, seed int64) {
	ctx := t.Context()
	cases := genRabbit(seed, 12)
	prefix := testenv.Name(t)
	b := Open(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: %s, delay: {mode: %s, resolution: 100ms, factor: 4, levels: 4}}
`, testenv.RabbitMQ.URL(), prefix, mode)).(*rabbit.Broker)
	topic, group := topicName(t), "foreign"
	sub := broker.Subscription{Topic: topic, Group: group, Concurrency: 4, ShutdownTimeout: 10 * time.Second,
		Policy: retrypolicy.Policy{MaxRetries: 2, Backoff: retrypolicy.Schedule{Delays: []time.Duration{100 * time.Millisecond}}}}
	t.Cleanup(func() { deleteTopology(t, b.Plan(sub)) })
	declare(t, b, sub)
	queue := rabbit.Queue(topic, group)
	dlqName := rabbit.DLQ(queue)

	// How a delivery or an entry is told apart: its message id, its fid
	// header, or its body (unique among those with neither).
	byID, byFid, byBody := map[string]int{}, map[string]int{}, map[string]int{}
	msgs := make([]foreignMsg, len(cases))
	for i, c := range cases {
		msgs[i] = foreignMsg{fate: c.fate, body: c.pub.Body, view: rabbitView(c.pub.Headers)}
		if c.fate == fateUndecodable {
			msgs[i].view = nil
		}
		fid, _ := c.pub.Headers["fid"].(string)
		switch {
		case c.pub.MessageId != "":
			byID[c.pub.MessageId] = i
		case fid != "" && c.fate != fateUndecodable:
			byFid[fid] = i
		default:
			if _, dup := byBody[string(c.pub.Body)]; dup {
				t.Fatalf("seed %d: messages %d and %d cannot be told apart", seed, byBody[string(c.pub.Body)], i)
			}
			byBody[string(c.pub.Body)] = i
		}
	}
	which := func(id, fid string, body []byte) (int, bool) {
		if i, ok := byID[id]; ok {
			return i, true
		}
		if i, ok := byFid[fid]; ok {
			return i, true
		}
		i, ok := byBody[string(body)]
		return i, ok
	}
	fr := newForeignRun(msgs, func(d *broker.Delivery) (int, bool) { return which(d.ID, d.Header("fid"), d.Value) })

	ch := testenv.AMQP(t)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		msgs[i].sent = time.Now()
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, b.Names().Topics(), topic, true, false, c.pub)
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish %d: not confirmed: %v", i, err)
		}
	}
	// The expired ones asked to live 1 ms: past it, RabbitMQ dead-letters
	// them instead of delivering them. Nothing announces that moment.
	time.Sleep(20 * time.Millisecond)

	s := &suite{env: Env{Name: string(rabbit.Name), Router: rabbit.Router{}}}
	st := newCounting(s.store(t, testenv.PostgreSQL.URL(), ""))
	stored, refused := fr.drive(t, s, b, st, sub, dlqName,
		func(e dlq.Entry) (int, bool) { return which(e.MessageID, e.OriginalHeaders["fid"], e.OriginalValue) },
		func(i int, e dlq.Entry) { checkRabbitEntry(t, i, cases[i], e) })
	for _, q := range []string{queue, dlqName} {
		waitDepth(t, ch, q, 0)
	}
	unroutable, err := ch.QueueDeclarePassive(b.Names().Unroutable(), true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	fr.account(t, seed, stored, unroutable.Messages, refused)
}

// checkRabbitEntry compares the entry kept of message i with what was
// published: the headers with their AMQP types and the properties (the
// expiration of an expired one is RabbitMQ's to drop); for an undecodable
// one, the refused bytes and the properties read after them.
func checkRabbitEntry(t *testing.T, i int, c rabbitCase, e dlq.Entry) {
	t.Helper()
	f, err := wire.Decode(e.OriginalWire)
	if err != nil {
		t.Errorf("message %d (%s): wire form: %v", i, c.fate, err)
		return
	}
	p, pub := f.Props, c.pub
	if p == nil {
		t.Errorf("message %d (%s): no properties kept", i, c.fate)
		return
	}
	if pub.MessageId != "" && e.MessageID != pub.MessageId {
		t.Errorf("message %d (%s): message id %q, want %q", i, c.fate, e.MessageID, pub.MessageId)
	}
	if c.fate == fateUndecodable {
		raw, _ := f.Headers.Get(rabbit.HeaderUndecodableRaw)
		if b, ok := raw.([]byte); !ok || len(b) == 0 || !p.Timestamp.Equal(pub.Timestamp) {
			t.Errorf("message %d (undecodable): refused bytes %T, timestamp %v; want the bytes and %v", i, raw, p.Timestamp, pub.Timestamp)
		}
		return
	}
	stored := amqp.Table{}
	for _, fld := range f.Headers {
		stored[fld.Name] = amqpOf(fld.Value)
	}
	// RabbitMQ's own headers (x-death and its summary) are kept after the
	// application's when it dead-lettered the message, never replayed.
	brokers := func(k string) bool {
		return k == "x-death" || strings.HasPrefix(k, "x-first-death-") || strings.HasPrefix(k, "x-last-death-")
	}
	for _, d := range diffHeaders(pub.Headers, stored, brokers) {
		t.Errorf("message %d (%s): kept %s", i, c.fate, d)
	}
	expiration := pub.Expiration
	if c.fate == fateExpired {
		expiration = p.Expiration // RabbitMQ drops it when it dead-letters
	}
	got := amqp.Publishing{ContentType: p.ContentType, ContentEncoding: p.ContentEncoding, DeliveryMode: p.DeliveryMode, Priority: p.Priority,
		CorrelationId: p.CorrelationID, ReplyTo: p.ReplyTo, Expiration: p.Expiration, Timestamp: p.Timestamp, Type: p.Type, UserId: p.UserID, AppId: p.AppID}
	want := amqp.Publishing{ContentType: pub.ContentType, ContentEncoding: pub.ContentEncoding, DeliveryMode: pub.DeliveryMode, Priority: pub.Priority,
		CorrelationId: pub.CorrelationId, ReplyTo: pub.ReplyTo, Expiration: expiration, Timestamp: pub.Timestamp, Type: pub.Type, UserId: pub.UserId, AppId: pub.AppId}
	if !got.Timestamp.Equal(want.Timestamp) {
		t.Errorf("message %d (%s): timestamp %v, want %v", i, c.fate, got.Timestamp, want.Timestamp)
	}
	got.Timestamp, want.Timestamp = time.Time{}, time.Time{}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("message %d (%s): kept properties %+v, want %+v", i, c.fate, got, want)
	}
	if !bytes.Equal(e.OriginalValue, pub.Body) {
		t.Errorf("message %d (%s): kept body differs", i, c.fate)
	}
}
