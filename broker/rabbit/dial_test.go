package rabbit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/rabbit"
	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
	"github.com/redrive/redrive/internal/testsupport/testenv"
)

// proxied returns testenv.RabbitMQ.URL() with its host replaced by a proxy's address.
func proxied(t *testing.T) (*tcpproxy.Proxy, string) {
	t.Helper()
	u, err := neturl.Parse(testenv.RabbitMQ.URL())
	if err != nil {
		t.Fatal(err)
	}
	px := tcpproxy.New(t, u.Host)
	u.Host = px.Addr()
	return px, u.String()
}

// closedURL is an AMQP URL with password pw on a port nothing listens on.
func closedURL(t *testing.T, pw string) string {
	return fmt.Sprintf("amqp://guest:%s@%s/", pw, testenv.ClosedAddr(t))
}

// warnings is a slog.Handler that sends every record's message to a
// channel, so that a test can await a log line.
type warnings chan string

func (w warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w warnings) Handle(_ context.Context, r slog.Record) error {
	select {
	case w <- r.Message:
	default:
	}
	return nil
}
func (w warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w warnings) WithGroup(string) slog.Handler      { return w }

func (w warnings) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-w:
			if strings.Contains(m, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no log line %q within 10 s", want)
		}
	}
}

func remote(c *amqp.Connection) string { return c.RemoteAddr().String() }

func TestDialerTakesTheFirstURLThatAnswers(t *testing.T) {
	d, err := rabbit.NewDialer(rabbit.DialerConfig{URLs: []string{closedURL(t, "one-S3CRET"), testenv.RabbitMQ.URL()}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Dial(t.Context(), "test")
	if err != nil {
		t.Fatalf("Dial with the second URL up: %v", err)
	}
	_ = conn.Close()
}

func TestDialerFailsOverWhenTheConnectionIsLost(t *testing.T) {
	px, first := proxied(t)
	logs := make(warnings, 16)
	d, err := rabbit.NewDialer(rabbit.DialerConfig{URLs: []string{first, testenv.RabbitMQ.URL()}, Timeout: time.Second, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := d.Dial(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := remote(conn); got != px.Addr() {
		t.Fatalf("first dial went to %s, want the first URL (%s)", got, px.Addr())
	}
	// A connection closed by its owner moves nothing.
	other, err := d.Dial(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Close()

	px.SetUp(false) // the node behind the first URL goes away
	logs.await(t, "connection lost")
	px.SetUp(true) // and comes back: redrive stays where it failed over to
	for range 2 {
		c, err := d.Dial(t.Context(), "test")
		if err != nil {
			t.Fatal(err)
		}
		if got := remote(c); got == px.Addr() {
			t.Errorf("dial after the loss went to the lost URL again (%s)", got)
		}
		_ = c.Close()
	}
}

func TestUnreachableURLsAreAllNamedWithoutPasswords(t *testing.T) {
	urls := []string{closedURL(t, "one-S3CRET"), closedURL(t, "two-S3CRET")}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := rabbit.New(ctx, rabbit.Config{URLs: urls, DialTimeout: time.Second})
	if err == nil {
		t.Fatal("New against closed ports succeeded")
	}
	msg := err.Error()
	for _, u := range urls {
		if host := strings.TrimSuffix(strings.SplitN(u, "@", 2)[1], "/"); !strings.Contains(msg, host) {
			t.Errorf("error %q does not name %s", msg, host)
		}
	}
	if strings.Contains(msg, "S3CRET") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line, passwords masked", msg)
	}
}

func TestURLAndURLsAreExclusive(t *testing.T) {
	_, err := rabbit.New(t.Context(), rabbit.Config{URL: testenv.RabbitMQ.URL(), URLs: []string{testenv.RabbitMQ.URL()}})
	if !errors.Is(err, rabbit.ErrInvalidConfig) || !strings.Contains(err.Error(), "url and urls") {
		t.Fatalf("New = %v, want ErrInvalidConfig naming url and urls", err)
	}
	_, err = rabbit.New(t.Context(), rabbit.Config{URLs: []string{testenv.RabbitMQ.URL(), "http://u:pw-S3CRET@h/"}})
	if !errors.Is(err, rabbit.ErrInvalidConfig) || !strings.Contains(err.Error(), "urls[1]") || strings.Contains(err.Error(), "S3CRET") {
		t.Fatalf("New = %v, want ErrInvalidConfig naming urls[1], password masked", err)
	}
}

// A broker whose first node goes away mid-traffic keeps publishing and
// consuming through the second: no Publish call fails and every message
// is handled.
func TestBrokerFailsOver(t *testing.T) {
	px, first := proxied(t)
	s := sub("failover." + broker.NewMessageID()[:6])
	s.Concurrency, s.Prefetch = 4, 16
	b := newBroker(t, func(c *rabbit.Config) { c.URL, c.URLs = "", []string{first, testenv.RabbitMQ.URL()} }, s)
	if err := b.Declare(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[string]int{}
	all := make(chan struct{})
	const n = 300
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, s, func(_ context.Context, d *broker.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			handled[d.ID]++
			if len(handled) == n && handled[d.ID] == 1 {
				close(all)
			}
			return nil
		})
	}()
	for i := range n / 10 {
		if i == n/20 {
			px.SetUp(false) // every connection through the first URL is cut
		}
		batch := make([]broker.Message, 10)
		for j := range batch {
			batch[j] = broker.Message{ID: fmt.Sprintf("m%03d", i*10+j), Value: []byte("v")}
		}
		// The publisher absorbs the loss: it sends what was not confirmed
		// again on the next URL, so no Publish call fails.
		if err := b.Publish(t.Context(), s.Topic, batch...); err != nil {
			t.Fatalf("publish batch %d: %v", i, err)
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("%d of %d messages handled 30 s after the first node went away", len(handled), n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}
}

func TestMaskURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"amqp://guest:s3cr3t@h:5673/v", "amqp://guest:***@h:5673/v"},
		{"amqps://u:p%40ss@h/", "amqps://u:***@h/"},
		{"amqp://h:5673/", "amqp://h:5673/"},
		{"amqp://u:pw@h:notaport/", "amqp://***"},
		{"amqp://guest:12/S3cr3t@host/", "amqp://***"}, // parses, host guest, port 12: masked whatever it parses to
	} {
		if got := rabbit.MaskURL(tt.in); got != tt.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
