package rabbit

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// A connection lost in the middle of a Publish call loses nothing: the
// messages whose confirm had not arrived are sent again on a new
// connection, and every message is on the queue once or (a lost confirm)
// twice.
func TestPublishResendsUnconfirmedAfterLostConnection(t *testing.T) {
	url := testenv.RabbitMQ.URL()
	b, err := New(t.Context(), Config{URL: url, Prefix: "pub-" + broker.NewMessageID()[:6], Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		testenv.RabbitMQ.Fail(t, err)
	}
	s := broker.Subscription{Topic: "resend." + broker.NewMessageID()[:6], Group: "g"}
	t.Cleanup(func() {
		_ = b.Close()
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		ch, _ := conn.Channel()
		for _, d := range b.Plan(s) {
			switch d.Kind {
			case "queue":
				_, _ = ch.QueueDelete(d.Name, false, false, false)
			case "exchange":
				_ = ch.ExchangeDelete(d.Name, false, false)
			}
		}
	})
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	const n = 20000
	msgs := make([]broker.Message, n)
	for i := range msgs {
		msgs[i] = broker.Message{ID: fmt.Sprintf("m-%05d", i), Value: make([]byte, 512)}
	}
	probe, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	pch, err := probe.Channel()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Publish(context.Background(), s.Topic, msgs...) }()
	// Cut the publishing connection while the batch is in flight: once the
	// first messages reached the queue (before, the cut would only make
	// Publish open a new connection; a fixed wait races both ways).
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, err := pch.QueueDeclarePassive(Queue(s.Topic, s.Group), true, false, false, false, nil)
		if err != nil {
			t.Fatalf("probe the queue: %v", err)
		}
		if q.Messages > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no message reached the queue within 30s")
		}
	}
	b.pub.mu.Lock()
	conn := b.pub.conn
	b.pub.mu.Unlock()
	_ = conn.Close()
	if err := <-done; err != nil {
		t.Fatalf("Publish across a lost connection: %v", err)
	}
	resent := b.pub.resent.Load()
	t.Logf("%d messages sent again after the lost connection", resent)
	if resent == 0 {
		t.Fatal("the connection was cut after the batch was confirmed: the test proved nothing (raise n)")
	}

	// Count what arrived, by id.
	cconn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	ch, _ := cconn.Channel()
	_ = ch.Qos(1000, 0, false)
	deliveries, err := ch.Consume(Queue(s.Topic, s.Group), "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	timeout := time.After(60 * time.Second)
	for len(seen) < n {
		select {
		case m := <-deliveries:
			seen[m.MessageId]++
		case <-timeout:
			t.Fatalf("%d of %d messages arrived: %d lost", len(seen), n, n-len(seen))
		}
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("all %d messages arrived, %d duplicates so far", n, dups)
}
