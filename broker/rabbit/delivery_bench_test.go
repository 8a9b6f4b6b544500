package rabbit

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// BenchmarkDeliveryPath is a consumer's own cost per delivery without a
// broker: the Delivery built from an AMQP delivery with the headers
// redrive's Publish writes (bench's consume row), and the pipeline's run of
// a no-op handler. The ack, the library's decoding and the broker are
// outside it.
func BenchmarkDeliveryPath(b *testing.B) {
	sub := broker.Subscription{Topic: "t", Group: "g"}.WithDefaults()
	c := &consumer{b: &Broker{cfg: Config{}.WithDefaults()}, sub: sub, queue: Queue(sub.Topic, sub.Group), instance: "bench",
		log: slog.New(slog.DiscardHandler)}
	c.pipe = driver.NewPipeline(sub, c.log)
	h := func(context.Context, *broker.Delivery) error { return nil }
	ctx := context.Background()
	ms := make([]amqp.Delivery, 1024)
	for i := range ms {
		ms[i] = amqp.Delivery{MessageId: broker.NewMessageID(), Timestamp: time.Now(), DeliveryMode: amqp.Persistent,
			Body: make([]byte, 1024), Headers: amqp.Table{"bench-seq": strconv.Itoa(i), driver.HeaderTopic: "t"}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := ms[i%len(ms)]
		d := c.delivery(m, false)
		if dec := c.pipe.Process(ctx, d, h, c.claim(m, d)); dec.Action != driver.ActionAck {
			b.Fatalf("decision %v", dec.Action)
		}
	}
}
