package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"testing"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// TestConsumerLagAndReady: while a handler stalls, the messages ready in
// the group queue are the consumer's lag (those held by the stalled
// consumer, up to its prefetch, are not); a lost connection makes
// ConsumerReady fail until the session is back.
func TestConsumerLagAndReady(t *testing.T) {
	u, err := neturl.Parse(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatal(err)
	}
	px := tcpproxy.New(t, u.Host)
	u.Host = px.Addr()
	s := sub("probe." + broker.NewMessageID()[:6])
	s.Concurrency, s.Prefetch = 1, 2
	b := newBroker(t, func(c *rabbit.Config) { c.URL = u.String(); c.DialTimeout = time.Second }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if err := b.ConsumerReady(t.Context(), s.Topic, s.Group); !errors.Is(err, rabbit.ErrNotConsuming) {
		t.Fatalf("ConsumerReady before Consume = %v, want ErrNotConsuming", err)
	}
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, s, func(ctx context.Context, d *broker.Delivery) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	const n = 7
	for i := range n {
		if err := b.Publish(t.Context(), s.Topic, broker.Message{ID: fmt.Sprint("m", i), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	// The stalled consumer holds its prefetch (2): 5 are ready.
	eventually(t, "lag 5 and ready", func() bool {
		l, err := b.ConsumerLag(t.Context(), s.Topic, s.Group)
		return err == nil && l == n-2 && b.ConsumerReady(t.Context(), s.Topic, s.Group) == nil
	})

	px.SetUp(false) // the connection is cut: the session ends
	eventually(t, "not ready while the connection is down", func() bool {
		return errors.Is(b.ConsumerReady(t.Context(), s.Topic, s.Group), rabbit.ErrNotConsuming)
	})
	time.Sleep(rabbit.LagCacheTTL)
	if _, err := b.ConsumerLag(t.Context(), s.Topic, s.Group); err == nil {
		t.Error("ConsumerLag while RabbitMQ is unreachable: no error")
	}
	px.SetUp(true)
	close(release)
	eventually(t, "ready again and caught up once the connection is back", func() bool {
		l, err := b.ConsumerLag(t.Context(), s.Topic, s.Group)
		return err == nil && l == 0 && b.ConsumerReady(t.Context(), s.Topic, s.Group) == nil
	})
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
