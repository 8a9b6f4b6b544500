package rabbit

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/wire"
)

// A dead letter read from a DLQ keeps the application's typed headers and
// the properties, the expiration and user id a copy carried as headers
// included; the broker's and redrive's own headers are not the
// application's. A message RabbitMQ dead-lettered itself records the topic
// it was published to (x-death routing keys), not the DLQ's routing key.
func TestEntryFromDeliveryKeepsTheWireForm(t *testing.T) {
	ts := time.Unix(1700000000, 0)
	m := amqp.Delivery{
		Headers: amqp.Table{
			"n": int16(-2), "d": amqp.Decimal{Scale: 1, Value: 5}, "tbl": amqp.Table{"k": []byte{1}},
			HeaderExpiration: "60000", HeaderUserID: "guest", broker.HeaderReason: "permanent",
			"x-death": []any{amqp.Table{"queue": "orders.billing", "reason": "expired", "count": int64(1),
				"routing-keys": []any{"orders"}}},
		},
		ContentType: "application/json", DeliveryMode: amqp.Transient, Priority: 3, Timestamp: ts, AppId: "billing",
		RoutingKey: "orders.billing", MessageId: "m1", Body: []byte("{}"),
	}
	e := EntryFromDelivery(m)
	f, err := wire.Decode(e.OriginalWire)
	if err != nil {
		t.Fatal(err)
	}
	// The application's headers, then the broker's story (x-death, with
	// its types), which a replay does not send.
	want := wire.Table{{Name: "d", Value: wire.Decimal{Scale: 1, Value: 5}}, {Name: "n", Value: int16(-2)},
		{Name: "tbl", Value: wire.Table{{Name: "k", Value: []byte{1}}}}, {Name: "x-death", Value: []any{}}}
	if len(f.Headers) != len(want) {
		t.Fatalf("headers = %#v, want %#v", f.Headers, want)
	}
	for i := range want {
		if f.Headers[i].Name != want[i].Name || wire.TypeName(f.Headers[i].Value) != wire.TypeName(want[i].Value) {
			t.Errorf("header %d = %s %T, want %s %T", i, f.Headers[i].Name, f.Headers[i].Value, want[i].Name, want[i].Value)
		}
	}
	p := f.Props
	if p.ContentType != "application/json" || p.DeliveryMode != amqp.Transient || p.Priority != 3 || !p.Timestamp.Equal(ts) ||
		p.AppID != "billing" || p.Expiration != "60000" || p.UserID != "guest" {
		t.Errorf("properties = %+v", p)
	}
	if e.OriginalHeaders["n"] != "-2" || e.OriginalHeaders["d"] != "0.5" || len(e.OriginalHeaders) != 2 {
		t.Errorf("string view = %q", e.OriginalHeaders)
	}

	m.Headers = amqp.Table{"x-death": m.Headers["x-death"]}
	if e := EntryFromDelivery(m); e.OriginalTopic != "orders" || e.Source != "orders.billing" || e.Reason != string(driver.ReasonExpired) {
		t.Errorf("broker-dead-lettered entry: topic %q source %q reason %q, want orders, orders.billing, expired", e.OriginalTopic, e.Source, e.Reason)
	}
}

// A copy keeps every property but expiration and user id, which it carries
// as headers.
func TestRepublishKeepsProperties(t *testing.T) {
	m := amqp.Delivery{ContentType: "text/plain", ContentEncoding: "gzip", DeliveryMode: amqp.Transient, Priority: 9,
		CorrelationId: "c", ReplyTo: "r", Expiration: "1000", MessageId: "id", Timestamp: time.Unix(5, 0), Type: "t",
		UserId: "guest", AppId: "a", Body: []byte("b")}
	p := republish(m, amqp.Table{})
	if p.ContentType != "text/plain" || p.ContentEncoding != "gzip" || p.DeliveryMode != amqp.Transient || p.Priority != 9 ||
		p.CorrelationId != "c" || p.ReplyTo != "r" || p.MessageId != "id" || !p.Timestamp.Equal(m.Timestamp) || p.Type != "t" ||
		p.AppId != "a" || string(p.Body) != "b" {
		t.Errorf("copy = %+v", p)
	}
	if p.Expiration != "" || p.UserId != "" || p.Headers[HeaderExpiration] != "1000" || p.Headers[HeaderUserID] != "guest" {
		t.Errorf("copy expiration %q user %q headers %v", p.Expiration, p.UserId, p.Headers)
	}
}
