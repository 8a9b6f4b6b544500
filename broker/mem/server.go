package mem

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
)

// DefaultMaxQueueLength is ServerConfig.MaxQueueLength's default.
const DefaultMaxQueueLength = 100_000

// ServerConfig configures a Server.
type ServerConfig struct {
	// Clock is the server's time: what delays, retry back-offs,
	// Subscription.MaxAge and the retry policy's elapsed budget count on.
	// nil (the default): the wall clock; a *Clock a test advances by hand.
	Clock *Clock
	// MaxQueueLength bounds the messages a worker's queue holds (waiting,
	// due and in its handlers): Publish fails with ErrQueueFull rather
	// than grow it further. Retry and dead-letter copies are never
	// refused (they replace a message already counted), nor are the DLQs
	// bounded. Default DefaultMaxQueueLength.
	MaxQueueLength int
}

// Validate reports the first problem of c, naming the field.
func (c ServerConfig) Validate() error {
	if c.MaxQueueLength < 0 {
		return fmt.Errorf("%w: MaxQueueLength %d is negative", ErrInvalidConfig, c.MaxQueueLength)
	}
	return nil
}

// Errors of the in-memory broker.
var (
	// ErrInvalidConfig is wrapped by the errors about a configuration or
	// a subscription; it matches driver.ErrInvalidConfig.
	ErrInvalidConfig = driver.NewError("mem: invalid config", driver.ErrInvalidConfig)
	// ErrClosed is returned by the methods of a closed Broker.
	ErrClosed = errors.New("mem: broker closed")
	// ErrQueueFull is wrapped by Publish when a worker's queue holds
	// ServerConfig.MaxQueueLength messages.
	ErrQueueFull = errors.New("mem: queue full")
	// ErrNoQueue is wrapped by Republish when its route's target is
	// neither a worker's queue nor a topic of the server.
	ErrNoQueue = errors.New("mem: no such queue or topic")
)

// Server is an in-memory broker: topics, each worker's queue and its
// dead-letter queue, held in the process. Brokers connected to the same
// Server (Server.Broker, or the descriptor's Open, which joins Default)
// see the same messages, as the processes of one broker would. Its
// methods are safe for concurrent use.
//
// A message published to a topic is copied to the queue of every worker
// (group) declared for it; a topic no worker was declared for keeps
// nothing (as a RabbitMQ exchange without bound queues).
type Server struct {
	cfg   ServerConfig
	clock *Clock
	id    string // tells its dead letters' identities from another server's

	mu      sync.Mutex
	topics  map[string][]*queue // topic → its workers' queues
	queues  map[string]*queue   // queue name → worker queue
	dlqs    map[string]*queue   // DLQ name → dead-letter queue
	seq     uint64
	changed chan struct{} // closed on every change: Idle and DLQ probes wait on it
	timer   *time.Timer   // wall clock: fires at timerAt, the first due time
	timerAt time.Time
}

// NewServer returns an empty Server.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxQueueLength == 0 {
		cfg.MaxQueueLength = DefaultMaxQueueLength
	}
	s := &Server{cfg: cfg, clock: cfg.Clock, id: broker.NewMessageID()[:12], topics: map[string][]*queue{},
		queues: map[string]*queue{}, dlqs: map[string]*queue{}, changed: make(chan struct{})}
	if s.clock != nil {
		s.clock.onMove(s.tick)
	}
	return s, nil
}

var (
	defaultMu     sync.Mutex
	defaultServer *Server
)

// Default returns the process's Server, on the wall clock: the one the
// descriptor's Open joins when it is given no Config.Server
// (`broker: memory` in a configuration, `redrive dev --broker memory`), so
// that every broker a program opens shares it.
func Default() *Server {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultServer == nil {
		defaultServer, _ = NewServer(ServerConfig{})
	}
	return defaultServer
}

// resetDefault forgets the process's Server (the dev server's Close):
// brokers opened on it keep it; the next Default is empty.
func resetDefault() {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultServer = nil
}

// Clock returns the server's clock; nil when it runs on the wall clock.
func (s *Server) Clock() *Clock { return s.clock }

// now is the server's time.
func (s *Server) now() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

// QueueName is the name of the queue of worker group of topic:
// "<topic>.<group>", the Delivery.Source of its messages and the target
// of its replays.
func QueueName(topic, group string) string { return topic + "." + group }

// DLQName is the name of the dead-letter queue of worker group of topic:
// "<topic>.<group>.dlq".
func DLQName(topic, group string) string { return QueueName(topic, group) + ".dlq" }

// bump wakes what waits for any change. s.mu is held.
func (s *Server) bump() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// declare creates the queue of sub, bound to its topic; s.mu is held.
func (s *Server) declare(sub broker.Subscription) (*queue, error) {
	name := QueueName(sub.Topic, sub.Group)
	if q, ok := s.queues[name]; ok {
		if q.topic != sub.Topic || q.group != sub.Group {
			return nil, fmt.Errorf("%w: worker %q of topic %q and worker %q of topic %q share the queue name %q",
				ErrInvalidConfig, q.group, q.topic, sub.Group, sub.Topic, name)
		}
		q.blocking = sub.RetryMode == broker.Blocking
		return q, nil
	}
	q := newQueue(name, sub.Topic, sub.Group, false)
	q.blocking = sub.RetryMode == broker.Blocking
	s.queues[name] = q
	s.topics[sub.Topic] = append(s.topics[sub.Topic], q)
	return q, nil
}

// dlq returns the dead-letter queue name, created empty when it is new;
// s.mu is held.
func (s *Server) dlq(name string) *queue {
	q, ok := s.dlqs[name]
	if !ok {
		q = newQueue(name, "", "", true)
		s.dlqs[name] = q
	}
	return q
}

// enqueue puts msgs in the queues of topic, due after delay; s.mu is
// held. Nothing is enqueued when a queue would grow over its bound.
func (s *Server) enqueue(topic string, delay time.Duration, msgs []*message) error {
	qs := s.topics[topic]
	for _, q := range qs {
		if q.length()+len(msgs) > s.cfg.MaxQueueLength {
			return fmt.Errorf("%w: %s holds %d messages, at most %d (ServerConfig.MaxQueueLength)",
				ErrQueueFull, q.name, q.length(), s.cfg.MaxQueueLength)
		}
	}
	now := s.now()
	for _, q := range qs {
		for _, m := range msgs {
			s.seq++
			q.push(&item{msg: m, due: now.Add(delay), seq: s.seq}, now)
		}
		q.signal()
	}
	s.schedule()
	s.bump()
	return nil
}

// tick makes what is due ready, at each move of the server's Clock or
// when its wall-clock timer fires.
func (s *Server) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timerAt = time.Time{}
	s.promoteAll()
	s.schedule()
	s.bump()
}

// promoteAll makes what is due now ready in every queue, waking their
// consumers; s.mu is held.
func (s *Server) promoteAll() {
	now := s.now()
	for _, qs := range []map[string]*queue{s.queues, s.dlqs} {
		for _, q := range qs {
			if q.promote(now) {
				q.signal()
			}
		}
	}
}

// schedule arms the wall-clock timer for the first due time; s.mu is
// held. On a Clock, the clock's moves tick.
func (s *Server) schedule() {
	if s.clock != nil {
		return
	}
	next := s.nextDue()
	if next.IsZero() || (!s.timerAt.IsZero() && !next.Before(s.timerAt)) {
		return
	}
	s.timerAt = next
	d := max(time.Until(next), 0)
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.tick)
		return
	}
	s.timer.Reset(d)
}

// nextDue is the first due time of a delayed message; s.mu is held.
func (s *Server) nextDue() time.Time {
	var next time.Time
	for _, q := range s.queues {
		if d := q.nextDue(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}
