package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/broker/wire"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/internal/testsupport/testenv"
	"github.com/redrive/redrive/retrypolicy"
)

// everyAMQPType is a header table with a value of every AMQP field type
// amqp091-go writes, nested tables and arrays included.
func everyAMQPType() amqp.Table {
	return amqp.Table{
		"t-bool":      true,
		"t-int8":      int8(-8),
		"t-uint8":     uint8(200),
		"t-int16":     int16(-1600),
		"t-uint16":    uint16(60000),
		"t-int32":     int32(-320000),
		"t-uint32":    uint32(4000000000),
		"t-int64":     int64(-1 << 40),
		"t-float32":   float32(1.25),
		"t-float64":   math.Pi,
		"t-decimal":   amqp.Decimal{Scale: 2, Value: -1234},
		"t-timestamp": time.Unix(1700000000, 0),
		"t-table":     amqp.Table{"inner": int32(1), "nested": amqp.Table{"s": "x", "n": int64(2)}},
		"t-array":     []any{int32(1), "two", []byte{3}, nil, true, amqp.Table{"k": int16(5)}},
		"t-bytes":     []byte{0, 1, 0xff},
		"t-string":    "café",
		"t-void":      nil,
		// W3C trace context (issue 18): kept byte for byte like the rest.
		"traceparent": "00-" + traceID + "-" + traceParent + "-01",
		"tracestate":  traceState,
	}
}

// TestRabbitMQFidelity (issue 12): messages published by a foreign
// application (the raw amqp091-go client) with a header of every AMQP
// type and every property are failed permanently (one after a delay hop
// and a retry); the dead-letter copy read raw, the stored entry and the
// replayed copy read raw carry the same header values with the same types
// and the same properties as the message a plain consumer of the topic
// reads (a W3C traceparent and tracestate among them), redrive adding
// only x-redrive-* headers; expiration and user id
// are kept in the entry, not set on the replay. Counted: every message is
// dead-lettered, stored and replayed once.
func TestRabbitMQFidelity(t *testing.T) {
	ctx := t.Context()
	id := broker.NewMessageID()[:6]
	b := Open(t, fmt.Sprintf(`
broker: rabbitmq
rabbitmq: {url: %q, prefix: fid-%s, delay: {mode: route, resolution: 100ms, factor: 4, levels: 4}}
`, testenv.RabbitMQ.URL(), id)).(*rabbit.Broker)
	topic, group := "fid."+id, "worker"
	sub := broker.Subscription{Topic: topic, Group: group, Concurrency: 2, ShutdownTimeout: 10 * time.Second,
		Policy: retrypolicy.Policy{MaxRetries: 3, Backoff: retrypolicy.Schedule{Delays: []time.Duration{200 * time.Millisecond}}}}
	t.Cleanup(func() { deleteTopology(t, b.Plan(sub)) })
	declare(t, b, sub)
	queue := rabbit.Queue(topic, group)
	dlqName := rabbit.DLQ(queue)

	conn, err := amqp.Dial(testenv.RabbitMQ.URL())
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	// A foreign application's own queue on the topic: what a plain
	// consumer reads is the reference.
	control := "fid-control-" + id
	if _, err := ch.QueueDeclare(control, true, false, false, false, nil); err != nil { // durable: RabbitMQ 4 deprecates transient non-exclusive queues
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.DeleteQueues(control) })
	if err := ch.QueueBind(control, topic, b.Names().Topics(), false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		msg  amqp.Publishing
		// retry: fail once retryably before failing for good.
		retry bool
	}{
		{"every type and property", amqp.Publishing{
			Headers: everyAMQPType(), ContentType: "application/json", ContentEncoding: "gzip", DeliveryMode: amqp.Persistent,
			Priority: 7, CorrelationId: "corr-1", ReplyTo: "replies", Expiration: "600000", MessageId: "fid-all",
			Timestamp: time.Unix(1700000123, 0), Type: "order.created", UserId: "guest", AppId: "billing",
			Body: []byte("{\n  \"pretty\": true\n}\n"),
		}, false},
		{"after a delay hop and a retry", amqp.Publishing{
			Headers: func() amqp.Table {
				h := everyAMQPType()
				h[broker.HeaderRemainingDelay] = int64(300) // a delay: the consumer moves it through the tiers
				return h
			}(),
			ContentType: "text/plain", DeliveryMode: amqp.Persistent, Priority: 1, CorrelationId: "corr-2", MessageId: "fid-retry",
			Timestamp: time.Unix(1700000456, 0), Type: "t2", AppId: "app2", Body: []byte{0, 0xff, 0xfe, '\n'},
		}, true},
		{"transient, no properties, empty body, a key", amqp.Publishing{
			Headers: amqp.Table{"only": int16(1), driver.HeaderKey: "deal-42"}, DeliveryMode: amqp.Transient, MessageId: "fid-bare", Body: []byte{},
		}, false},
	}
	byID := map[string]int{}
	for i, c := range cases {
		byID[c.msg.MessageId] = i
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, b.Names().Topics(), topic, true, false, c.msg)
		if err != nil {
			t.Fatalf("publish %s: %v", c.name, err)
		}
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish %s: not confirmed: %v", c.name, err)
		}
	}
	ref := map[string]amqp.Delivery{}
	for _, m := range getN(t, ch, control, len(cases)) {
		ref[m.MessageId] = m
	}
	for k, v := range everyAMQPType() {
		if got := ref["fid-all"].Headers[k]; !sameAMQP(got, v) {
			t.Logf("note: RabbitMQ itself delivers header %s as %T %v (published %T %v); the reference is what it delivers", k, got, got, v, v)
		}
	}

	// The worker fails them: the retry case once retryably, then all for good.
	views := make(chan map[string]string, 10)
	stop := testenv.Consume(t, b, sub, func(_ context.Context, d *broker.Delivery) error {
		if d.ID == "fid-all" {
			views <- d.Headers
		}
		if cases[byID[d.ID]].retry && d.Attempt == 1 {
			return failing("try again")
		}
		return broker.Permanent(failing("cannot process %s", d.ID))
	})
	select {
	case h := <-views: // the handler's string view
		if h["t-int16"] != "-1600" || h["t-decimal"] != "-12.34" || h["t-bool"] != "true" || h["t-bytes"] != "\x00\x01\xff" {
			t.Errorf("handler's string view = %q", h)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler never saw fid-all")
	}

	// The DLQ copies, read raw (then put back for the keeper).
	waitDepth(t, ch, dlqName, len(cases))
	copies := getN(t, ch, dlqName, len(cases))
	for _, m := range copies {
		c := cases[byID[m.MessageId]]
		want := ref[m.MessageId]
		for _, p := range diffHeaders(want.Headers, m.Headers, extraOwn) {
			t.Errorf("%s: DLQ copy: %s", c.name, p)
		}
		for _, p := range diffProps(want, m, false) {
			t.Errorf("%s: DLQ copy: %s", c.name, p)
		}
		if !bytes.Equal(m.Body, want.Body) {
			t.Errorf("%s: DLQ copy body %q, want %q", c.name, m.Body, want.Body)
		}
		if c.retry && (m.Headers[broker.HeaderAttempt] != "2" || m.Headers[broker.HeaderReason] != string(driver.ReasonPermanent)) {
			t.Errorf("%s: DLQ copy attempt %v reason %v, want 2 and permanent", c.name, m.Headers[broker.HeaderAttempt], m.Headers[broker.HeaderReason])
		}
		if _, ok := m.Headers[broker.HeaderRemainingDelay]; ok {
			t.Errorf("%s: DLQ copy still carries %s", c.name, broker.HeaderRemainingDelay)
		}
		if err := m.Nack(false, true); err != nil {
			t.Fatal(err)
		}
	}

	// The keeper stores them: the entry keeps the exact form.
	s := &suite{env: Env{Name: string(rabbit.Name), Router: rabbit.Router{}}}
	st := newCounting(s.store(t, testenv.PostgreSQL.URL(), ""))
	s.keeper(t, b, st, dlqName, nil)
	st.waitAll(t, dlqName, int64(len(cases)), 60*time.Second)
	page, err := st.List(ctx, dlq.Query{DLQ: dlqName, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		full, err := st.Get(ctx, dlqName, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		e := full.Entry
		want := ref[e.MessageID]
		f, err := wire.Decode(e.OriginalWire)
		if err != nil {
			t.Fatalf("%s: stored wire form: %v", e.MessageID, err)
		}
		stored := amqp.Table{}
		for _, fld := range f.Headers {
			stored[fld.Name] = amqpOf(fld.Value)
		}
		for _, p := range diffHeaders(want.Headers, stored, nil) {
			t.Errorf("%s: stored entry: %s", e.MessageID, p)
		}
		p := f.Props
		if p == nil || p.ContentType != want.ContentType || p.ContentEncoding != want.ContentEncoding || p.DeliveryMode != want.DeliveryMode ||
			p.Priority != want.Priority || p.CorrelationID != want.CorrelationId || p.ReplyTo != want.ReplyTo || !p.Timestamp.Equal(want.Timestamp) ||
			p.Type != want.Type || p.AppID != want.AppId || p.Expiration != want.Expiration || p.UserID != want.UserId {
			t.Errorf("%s: stored properties %+v, want those of %+v", e.MessageID, p, want)
		}
		if !bytes.Equal(e.OriginalValue, want.Body) || (e.MessageID == "fid-bare") != (string(e.OriginalKey) == "deal-42") {
			t.Errorf("%s: stored value %q key %q", e.MessageID, e.OriginalValue, e.OriginalKey)
		}
	}
	if ref["fid-all"].Expiration != "600000" || ref["fid-all"].UserId != "guest" {
		t.Fatalf("the reference lost expiration or user id: %+v", ref["fid-all"])
	}

	// Replay them with the worker stopped, and read the copies raw.
	stop()
	ops := s.ops(t, b, st, [2]string{topic, group})
	for _, r := range page.Records {
		if _, err := ops.Replay(ctx, dlqName, r.ID, "e2e"); err != nil {
			t.Fatalf("Replay %s: %v", r.Entry.MessageID, err)
		}
	}
	replayed := getN(t, ch, queue, len(cases))
	for _, m := range replayed {
		c := cases[byID[m.MessageId]]
		want := ref[m.MessageId]
		allowed := func(k string) bool {
			return k == broker.HeaderReplayedFrom || k == driver.HeaderTopic || k == driver.HeaderKey
		}
		for _, p := range diffHeaders(want.Headers, m.Headers, allowed) {
			t.Errorf("%s: replayed copy: %s", c.name, p)
		}
		for _, p := range diffProps(want, m, false) {
			t.Errorf("%s: replayed copy: %s", c.name, p)
		}
		if !bytes.Equal(m.Body, want.Body) || m.Headers[driver.HeaderTopic] != topic ||
			!strings.HasPrefix(fmt.Sprint(m.Headers[broker.HeaderReplayedFrom]), dlqName+"/") {
			t.Errorf("%s: replayed copy body %q, headers %v", c.name, m.Body, m.Headers)
		}
		if err := m.Ack(false); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(replayed); n != len(cases) {
		t.Errorf("%d replayed copies, want %d", n, len(cases))
	}
	waitDepth(t, ch, queue, 0)
	t.Logf("published %d, dead-lettered %d, stored %d, replayed %d", len(cases), len(copies), len(page.Records), len(replayed))
}

// extraOwn allows the headers redrive adds to a copy: its own.
func extraOwn(name string) bool { return wire.Own(name) || name == rabbit.HeaderTierPasses }

// getN takes n messages from queue with basic.get, unacknowledged, waiting
// up to 30 s.
func getN(t *testing.T, ch *amqp.Channel, queue string, n int) []amqp.Delivery {
	t.Helper()
	var out []amqp.Delivery
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n {
		m, ok, err := ch.Get(queue, false)
		if err != nil {
			t.Fatalf("get from %s: %v", queue, err)
		}
		if ok {
			out = append(out, m)
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d messages", queue, len(out), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out
}

// waitDepth waits until queue holds n ready messages.
func waitDepth(t *testing.T, ch *amqp.Channel, queue string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			t.Fatalf("inspect %s: %v", queue, err)
		}
		if q.Messages == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d messages, want %d", queue, q.Messages, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// diffHeaders lists how got differs from want's application headers
// (redrive's own in want are not the application's): each missing, each
// of another type or value, and each extra header that extra does not
// allow.
func diffHeaders(want, got amqp.Table, extra func(string) bool) []string {
	var out []string
	for _, k := range slices.Sorted(keysOf(want)) {
		if wire.Own(k) {
			continue
		}
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("header %q missing", k))
		case !sameAMQP(g, want[k]):
			out = append(out, fmt.Sprintf("header %q = %T %#v, want %T %#v", k, g, g, want[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(keysOf(got)) {
		if _, ok := want[k]; ok && !wire.Own(k) {
			continue // compared above
		}
		if extra == nil || !extra(k) {
			out = append(out, fmt.Sprintf("extra header %q = %#v", k, got[k]))
		}
	}
	return out
}

func keysOf(t amqp.Table) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range t {
			if !yield(k) {
				return
			}
		}
	}
}

// sameAMQP compares header values type by type: the same Go type (the
// AMQP field type) and value, recursively; times by instant.
func sameAMQP(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch av := a.(type) {
	case amqp.Table:
		bv := b.(amqp.Table)
		if len(av) != len(bv) {
			return false
		}
		for k, v := range av {
			w, ok := bv[k]
			if !ok || !sameAMQP(v, w) {
				return false
			}
		}
		return true
	case []any:
		bv := b.([]any)
		if len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !sameAMQP(av[i], bv[i]) {
				return false
			}
		}
		return true
	case time.Time:
		return av.Equal(b.(time.Time))
	case float64:
		return math.Float64bits(av) == math.Float64bits(b.(float64))
	case float32:
		return math.Float32bits(av) == math.Float32bits(b.(float32))
	}
	return reflect.DeepEqual(a, b)
}

// amqpOf turns a stored wire value back into amqp091-go's form.
func amqpOf(v any) any {
	switch v := v.(type) {
	case wire.Decimal:
		return amqp.Decimal{Scale: v.Scale, Value: v.Value}
	case wire.Table:
		t := amqp.Table{}
		for _, f := range v {
			t[f.Name] = amqpOf(f.Value)
		}
		return t
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = amqpOf(e)
		}
		return out
	}
	return v
}

// diffProps lists the properties of got that differ from want's. A copy
// redrive publishes never carries expiration or user id (withLimits
// false); message id is compared too.
func diffProps(want, got amqp.Delivery, withLimits bool) []string {
	var out []string
	check := func(name string, w, g any) {
		if !reflect.DeepEqual(w, g) {
			out = append(out, fmt.Sprintf("property %s = %#v, want %#v", name, g, w))
		}
	}
	check("content_type", want.ContentType, got.ContentType)
	check("content_encoding", want.ContentEncoding, got.ContentEncoding)
	check("delivery_mode", want.DeliveryMode, got.DeliveryMode)
	check("priority", want.Priority, got.Priority)
	check("correlation_id", want.CorrelationId, got.CorrelationId)
	check("reply_to", want.ReplyTo, got.ReplyTo)
	check("type", want.Type, got.Type)
	check("app_id", want.AppId, got.AppId)
	check("message_id", want.MessageId, got.MessageId)
	if !want.Timestamp.Equal(got.Timestamp) {
		out = append(out, fmt.Sprintf("property timestamp = %v, want %v", got.Timestamp, want.Timestamp))
	}
	if withLimits {
		check("expiration", want.Expiration, got.Expiration)
		check("user_id", want.UserId, got.UserId)
	} else {
		check("expiration", "", got.Expiration)
		check("user_id", "", got.UserId)
	}
	return out
}
