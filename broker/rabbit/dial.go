package rabbit

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Dialer opens AMQP connections to the first of several URLs that answers:
// the nodes of a RabbitMQ cluster, or load balancers in front of it. Every
// connection redrive opens goes through one: publishers, consumers, the
// topology, the DLQ keeper, queue-depth monitoring.
//
// A dial tries each URL once, starting with the preferred one: the first
// URL at the start, then the URL of the last successful dial. When a
// connection it opened is lost (closed by the server or the network, not
// by its owner) the preferred URL moves to the next one, so the owner's
// reconnect fails over to another node without waiting for the lost
// one's dial timeout. Errors and logs show the URLs with their passwords
// masked (MaskURL). A Dialer is safe for concurrent use.
type Dialer struct {
	cfg  DialerConfig
	next atomic.Int64 // index of the URL the next dial tries first
}

// DialerConfig configures a Dialer.
type DialerConfig struct {
	// URLs to dial, in order of preference; at least one, each a valid
	// amqp:// or amqps:// URL.
	URLs []string
	// TLS, when not nil, overrides the TLS settings derived from amqps://
	// URLs; each connection verifies the host it dials unless TLS names a
	// server.
	TLS *tls.Config
	// Timeout bounds one connection attempt; default DefaultDialTimeout.
	Timeout time.Duration
	// Name prefixes the connection names RabbitMQ shows; default
	// "redrive".
	Name string
	// Logger receives a warning at each fail-over; default slog.Default().
	Logger *slog.Logger
}

// Validate returns nil when c is usable, else an error wrapping
// ErrInvalidConfig that names the first URL that is not (url, or urls[i]
// of a list, as the configuration file names them).
func (c DialerConfig) Validate() error {
	if len(c.URLs) == 0 {
		return fmt.Errorf("%w: no url", ErrInvalidConfig)
	}
	for i, u := range c.URLs {
		if _, err := amqp.ParseURI(u); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, urlField(len(c.URLs), i, u), err)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: DialerConfig.Timeout: must be >= 0, got %s", ErrInvalidConfig, c.Timeout)
	}
	return nil
}

// NewDialer returns a Dialer of cfg, or cfg's Validate error.
func NewDialer(cfg DialerConfig) (*Dialer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.URLs = append([]string(nil), cfg.URLs...)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultDialTimeout
	}
	if cfg.Name == "" {
		cfg.Name = "redrive"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Dialer{cfg: cfg}, nil
}

// urlField names URL i of n in errors: "url <masked>" for the one-URL
// form, "urls[i] <masked>" for a list.
func urlField(n, i int, raw string) string {
	if n == 1 {
		return fmt.Sprintf("url %q", MaskURL(raw))
	}
	return fmt.Sprintf("urls[%d] %q", i, MaskURL(raw))
}

// Dial connects to the first URL that answers, starting with the
// preferred one, and names the connection for role (as RabbitMQ's
// management shows it). ctx bounds the whole attempt.
func (d *Dialer) Dial(ctx context.Context, role string) (*amqp.Connection, error) {
	urls := d.cfg.URLs
	start := int(d.next.Load())
	var earlier []string // "url: error" of the URLs before the last one tried
	var lastURL string
	var last error
	for k := range urls {
		i := (start + k) % len(urls)
		if last != nil {
			earlier = append(earlier, fmt.Sprintf("%s: %v", lastURL, last))
		}
		conn, err := d.dialOne(ctx, urls[i], role)
		if err == nil {
			if d.next.Swap(int64(i)) != int64(i) {
				d.cfg.Logger.Warn("rabbit: failed over to another node", "url", MaskURL(urls[i]), "role", role)
			}
			d.watch(conn, i)
			return conn, nil
		}
		lastURL, last = MaskURL(urls[i]), err
		if ctx.Err() != nil {
			break
		}
	}
	if len(earlier) == 0 {
		return nil, fmt.Errorf("rabbit: connect to %s: %w", lastURL, last)
	}
	return nil, fmt.Errorf("rabbit: no node answered: %s; %s: %w", strings.Join(earlier, "; "), lastURL, last)
}

// watch moves the preferred URL past i when conn is lost.
func (d *Dialer) watch(conn *amqp.Connection, i int) {
	n := len(d.cfg.URLs)
	if n == 1 {
		return
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	go func() {
		e, ok := <-closed
		if !ok || e == nil { // closed by its owner
			return
		}
		if d.next.CompareAndSwap(int64(i), int64((i+1)%n)) {
			d.cfg.Logger.Warn("rabbit: connection lost; the next connections try another node first",
				"lost", MaskURL(d.cfg.URLs[i]), "next", MaskURL(d.cfg.URLs[(i+1)%n]), "err", e)
		}
	}()
}

// dialOne connects to url, giving up when ctx ends. The connection reads
// through framefilter (see transport).
func (d *Dialer) dialOne(ctx context.Context, url, role string) (*amqp.Connection, error) {
	props := amqp.NewConnectionProperties()
	host, _ := os.Hostname()
	props.SetClientConnectionName(fmt.Sprintf("%s-%s@%s-%d", d.cfg.Name, role, host, os.Getpid()))
	cfg := amqp.Config{
		Properties: props,
		Heartbeat:  10 * time.Second,
		FrameSize:  frameSize,
	}
	url, dial, err := d.transport(url, role)
	if err != nil {
		return nil, err
	}
	cfg.Dial = dial
	type result struct {
		c   *amqp.Connection
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := amqp.DialConfig(url, cfg)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				_ = r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
