// Package claims is the Redis implementation of broker.ClaimCounter, the
// claim counter behind poison-pill protection (Subscription.MaxClaims).
//
// A claim is one INCR + EXPIRE, in one round trip, before the handler runs;
// Release deletes the key when the message is done. When Redis is
// unreachable, Claim returns an error (the backends then handle the message
// anyway), logs once per outage and counts redrive_claims_unavailable_total.
package claims

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
)

// Defaults of a Counter.
const (
	// DefaultTTL is how long a claim count lives after its last claim.
	DefaultTTL = 24 * time.Hour
	// DefaultTimeout bounds one Redis round trip, so that a slow Redis
	// delays a message at most this long.
	DefaultTimeout = 500 * time.Millisecond
)

// ErrUnavailable is wrapped by Claim errors when Redis cannot be reached.
var ErrUnavailable = errors.New("claims: redis unavailable")

// Counter counts claims in Redis. It is safe for concurrent use.
type Counter struct {
	rdb         redis.Cmdable
	prefix      string
	ttl         time.Duration
	timeout     time.Duration
	log         *slog.Logger
	down        atomic.Bool
	unavailable prometheus.Counter
}

var _ broker.ClaimCounter = (*Counter)(nil)

// Config configures a Counter. The zero Config is the default.
type Config struct {
	// TTL is how long a count lives after its last claim. Default
	// DefaultTTL; >= 0.
	TTL time.Duration
	// Timeout bounds one Redis round trip. Default DefaultTimeout; >= 0.
	Timeout time.Duration
	// Prefix goes in front of every key the counter writes (the
	// configuration's redis.prefix), so that applications sharing a
	// Redis do not count each other's claims. Default "".
	Prefix string
	// Logger receives the outages, once each. Default slog.Default().
	Logger *slog.Logger
	// Unavailable counts the claims that could not be counted, instead of
	// a counter of the Counter's own: for several Counters exported
	// through one registry, which holds one
	// redrive_claims_unavailable_total. Default NewUnavailableCounter().
	Unavailable prometheus.Counter
}

// Validate returns nil when c is usable, else an error naming the field.
func (c Config) Validate() error {
	switch {
	case c.TTL < 0:
		return fmt.Errorf("claims: Config.TTL: must be >= 0, got %s", c.TTL)
	case c.Timeout < 0:
		return fmt.Errorf("claims: Config.Timeout: must be >= 0, got %s", c.Timeout)
	}
	return nil
}

// NewUnavailableCounter returns a new redrive_claims_unavailable_total
// counter, for Config.Unavailable.
func NewUnavailableCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "redrive_claims_unavailable_total",
		Help: "Claims that could not be counted because Redis was unavailable; the message was handled anyway.",
	})
}

// New returns a Counter on rdb, or cfg's Validate error.
func New(rdb redis.Cmdable, cfg Config) (*Counter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Counter{
		rdb:         rdb,
		prefix:      cfg.Prefix,
		ttl:         cmp.Or(cfg.TTL, DefaultTTL),
		timeout:     cmp.Or(cfg.Timeout, DefaultTimeout),
		log:         cfg.Logger,
		unavailable: cfg.Unavailable,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.unavailable == nil {
		c.unavailable = NewUnavailableCounter()
	}
	return c, nil
}

// Collector returns the counter of unavailable claims, to register.
func (c *Counter) Collector() prometheus.Collector { return c.unavailable }

// Unavailable returns how many claims could not be counted so far.
func (c *Counter) Unavailable() float64 {
	var m dtoMetric
	return m.read(c.unavailable)
}

// Claim increments key and refreshes its expiry in one round trip and
// returns the count.
func (c *Counter) Claim(ctx context.Context, key string) (int64, error) {
	key = c.prefix + key
	var incr *redis.IntCmd
	err := c.bounded(ctx, func(ctx context.Context) error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			incr = p.Incr(ctx, key)
			p.Expire(ctx, key, c.ttl)
			return nil
		})
		return err
	})
	if notACount(err) || err == nil && incr.Val() < 1 {
		return c.reset(ctx, key, err)
	}
	if err != nil {
		c.unavailable.Inc()
		if !c.down.Swap(true) {
			c.log.Warn("claims: redis unavailable; messages are handled without poison-pill protection until it is back",
				"error", err)
		}
		return 0, fmt.Errorf("%w: claim %q: %w", ErrUnavailable, key, err)
	}
	if c.down.Swap(false) {
		c.log.Info("claims: redis is back; poison-pill protection resumed")
	}
	return incr.Val(), nil
}

// notACount reports whether err is Redis refusing to count because the
// key holds something else than a count (a value someone else wrote).
func notACount(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "WRONGTYPE") || strings.Contains(msg, "not an integer") || strings.Contains(msg, "overflow")
}

// reset replaces a key that holds no count (another type, text, a number
// out of range or below 1: written by someone else) with this claim,
// count 1, and logs it: the value was unreadable, and a message must not
// lose its poison-pill protection for the key's life.
func (c *Counter) reset(ctx context.Context, key string, cause error) (int64, error) {
	err := c.bounded(ctx, func(ctx context.Context) error {
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, key)
			p.Set(ctx, key, 1, c.ttl)
			return nil
		})
		return err
	})
	if err != nil {
		c.unavailable.Inc()
		return 0, fmt.Errorf("%w: reset claim %q: %w", ErrUnavailable, key, err)
	}
	why := "a count below 1"
	if cause != nil {
		why = cause.Error()
	}
	c.log.Warn("claims: a claim key held no count (written by someone else); counting starts again at 1",
		"key", key, "found", why)
	return 1, nil
}

// Release deletes key.
func (c *Counter) Release(ctx context.Context, key string) error {
	key = c.prefix + key
	err := c.bounded(ctx, func(ctx context.Context) error { return c.rdb.Del(ctx, key).Err() })
	if err != nil {
		return fmt.Errorf("%w: release %q: %w", ErrUnavailable, key, err)
	}
	return nil
}

// errTimeout is returned by bounded when Redis did not answer in time.
var errTimeout = errors.New("no answer in time")

// bounded runs f and waits for it at most the counter's timeout: go-redis
// clients ignore context deadlines unless built with ContextTimeoutEnabled,
// and a silent Redis must not hold a message longer. A call given up on
// finishes in the background within the client's own read timeout.
func (c *Counter) bounded(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- f(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done: // f answered as the deadline passed, or its goroutine's cancel ended ctx
			return err
		default:
		}
		return fmt.Errorf("%w (%s): %w", errTimeout, c.timeout, ctx.Err())
	}
}
