package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// Broker is the Kafka implementation of broker.Broker. Create it with New.
// All methods are safe for concurrent use.
type Broker struct {
	cfg Config
	log *slog.Logger

	// prod publishes every record the Broker writes (Publish, retry and
	// dead-letter copies) and carries the admin requests.
	prod *kgo.Client
	adm  *kadm.Client

	mu        sync.Mutex
	closed    bool
	known     map[string]bool // topics known to exist
	consumers map[consumerKey][]*consumer
	holds     driver.Holds // PauseConsume
	share     shareState   // share-mode workers (share_topology.go)
}

var _ broker.Broker = (*Broker)(nil)

// New connects to the cluster of cfg.Brokers and returns a Broker. It fails
// with an error naming the brokers when none of them answers within
// cfg.ConnectTimeout (or before ctx ends).
func New(ctx context.Context, cfg Config) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Broker{cfg: cfg, log: cfg.Logger.With("broker", Name), known: make(map[string]bool)}

	opts := b.baseOptions()
	opts = append(opts,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Let a deadline fail records already sent to a broker that never
		// answers (a cluster that went away); without this, the idempotent
		// producer waits for the answer forever. Publishing again after such
		// an error may duplicate, which at-least-once allows.
		kgo.AllowIdempotentProduceCancellation(),
		kgo.ProducerBatchMaxBytesFn(func(topic string) int32 {
			if strings.HasSuffix(topic, dlqSuffix) {
				return int32(dlqMaxBytes(cfg.MaxMessageBytes))
			}
			return int32(max(cfg.MaxMessageBytes+recordOverhead, 1000012))
		}),
		kgo.ProducerLinger(0),
	)
	opts = append(opts, cfg.clientOptions()...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: new client for brokers %s: %w", b.brokerList(), err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	started := time.Now()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka: cannot reach brokers %s (%s): %w", b.brokerList(), waited(time.Since(started), cfg.ConnectTimeout), err)
	}
	b.prod = cl
	b.adm = kadm.NewClient(cl)
	return b, nil
}

// waited says how long a failed attempt took against its limit: "gave up
// after 10s" when it ran out of time, "failed after 3ms" when every
// broker refused before that.
func waited(took, limit time.Duration) string {
	if took >= limit {
		return "gave up after " + limit.String()
	}
	return fmt.Sprintf("failed after %s, before the %s connect timeout", took.Round(time.Millisecond), limit)
}

// baseOptions are the options every client of b shares.
func (b *Broker) baseOptions() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(b.cfg.Brokers...),
		kgo.ClientID(b.cfg.ClientID),
		kgo.WithLogger(slogAdapter{b.log}),
		kgo.DialTimeout(b.cfg.ConnectTimeout),
	}
}

// brokerList renders the seed brokers for error messages.
func (b *Broker) brokerList() string {
	return "[" + strings.Join(b.cfg.Brokers, ", ") + "]"
}

// InstanceID returns the worker instance recorded in dead-letter envelopes.
func (b *Broker) InstanceID() string { return b.cfg.InstanceID }

// Close releases the producer and admin connections. Consume calls must have
// returned: their retry and dead-letter copies are written with the
// producer Close closes.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.prod.Close()
	return nil
}

// isClosed reports whether Close was called.
func (b *Broker) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// slogAdapter sends franz-go's logs to slog, at Warn and above (franz-go's
// Info is chatty about every connection and rebalance step).
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	default:
		l = slog.LevelDebug
	}
	a.l.Log(context.Background(), l, "franz-go: "+msg, keyvals...)
}
