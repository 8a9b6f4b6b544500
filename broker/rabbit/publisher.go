package rabbit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/broker"
)

// outgoing is one message to publish.
type outgoing struct {
	exchange, key string
	msg           amqp.Publishing
}

// publisher owns a connection and a confirm-mode channel, reopened lazily
// after a failure. Publishes are pipelined: every message of a batch is
// sent, then every confirm is awaited.
type publisher struct {
	b      *Broker
	resent atomic.Int64 // messages sent again after a lost channel

	mu   sync.Mutex
	conn *amqp.Connection
	ch   *amqp.Channel
	rt   *returnTracker
}

// session returns the open channel and its return tracker, opening them
// when needed.
func (p *publisher) session(ctx context.Context) (*amqp.Channel, *returnTracker, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != nil && !p.ch.IsClosed() {
		return p.ch, p.rt, nil
	}
	if p.conn == nil || p.conn.IsClosed() {
		conn, err := p.b.dial(ctx, "publisher")
		if err != nil {
			return nil, nil, err
		}
		p.conn = conn
	}
	ch, err := p.conn.Channel()
	if err != nil {
		return nil, nil, fmt.Errorf("rabbit: open publish channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, nil, fmt.Errorf("rabbit: enable publisher confirms: %w", err)
	}
	p.ch = ch
	p.rt = newReturnTracker(ch)
	return p.ch, p.rt, nil
}

// Bounds of publish's resends after a lost channel or connection.
const (
	publishAttempts  = 5
	firstResendDelay = 50 * time.Millisecond
	maxResendDelay   = 2 * time.Second
)

// publish sends every message and returns once the broker confirmed all of
// them. A message the broker could not route (mandatory) is an error
// wrapping broker.ErrUnroutable; a nack is an error too. When the channel
// or connection is lost before every confirm arrived, the messages not yet
// confirmed are sent again on a new connection (at least once: a message
// whose confirm was lost may arrive twice; its message id is kept), up to
// publishAttempts times.
func (p *publisher) publish(ctx context.Context, out ...outgoing) error {
	wait := firstResendDelay
	for attempt := 1; ; attempt++ {
		unconfirmed, err := p.publishOnce(ctx, out)
		if err == nil || unconfirmed == nil || attempt == publishAttempts || ctx.Err() != nil {
			return err
		}
		p.resent.Add(int64(len(unconfirmed)))
		p.b.log.Warn("rabbit: channel lost while publishing; sending the unconfirmed messages again",
			"unconfirmed", len(unconfirmed), "of", len(out), "attempt", attempt, "err", err)
		out = unconfirmed
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxResendDelay)
	}
}

// publishOnce publishes out on the current session. When the channel was
// lost before every confirm arrived it returns the unconfirmed messages
// with the error; for any other error, nil.
func (p *publisher) publishOnce(ctx context.Context, out []outgoing) ([]outgoing, error) {
	ch, rt, err := p.session(ctx)
	if err != nil {
		return out, err // nothing was sent
	}
	confs := make([]*amqp.DeferredConfirmation, 0, len(out))
	for i, o := range out {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, o.exchange, o.key, true, false, o.msg)
		if err != nil {
			err = fmt.Errorf("rabbit: publish to %q key %q: %w", o.exchange, o.key, err)
			if !ch.IsClosed() && !connectionLost(err) {
				return nil, err
			}
			// The channel is gone, or its connection failed a write (the
			// library closes it a moment later): the next attempt opens a
			// new one. What was sent waits on its confirms below (nacked
			// by the library); the rest was never sent.
			p.discard(ch)
			unsent := out[i:]
			confirmedUpTo, _ := p.awaitConfirms(ctx, confs)
			return append(unconfirmedOf(out[:i], confirmedUpTo), unsent...), err
		}
		confs = append(confs, dc)
	}
	acked, err := p.awaitConfirms(ctx, confs)
	if err != nil {
		return nil, err
	}
	if n := countFalse(acked); n > 0 {
		if ch.IsClosed() { // pending confirms are nacked when the channel closes
			return unconfirmedOf(out, acked), fmt.Errorf("rabbit: channel closed before %d of %d confirms", n, len(out))
		}
		return nil, fmt.Errorf("rabbit: broker refused (nack) %d of %d messages", n, len(out))
	}
	// A closed channel ends the tracker after it recorded every return it
	// received, so its record is complete either way.
	rt.sync()
	var re returnedError
	for _, o := range out {
		if r, ok := rt.take(o.msg.MessageId); ok {
			re.out = append(re.out, o)
			re.errs = append(re.errs, fmt.Errorf("rabbit: message %s to %q key %q returned (%d %s): %w",
				o.msg.MessageId, o.exchange, o.key, r.ReplyCode, r.ReplyText, broker.ErrUnroutable))
		}
	}
	if len(re.out) == 0 {
		return nil, nil
	}
	return nil, &re
}

// returnedError is publish's error when the broker returned messages
// (mandatory, no queue bound): one error wrapping broker.ErrUnroutable per
// message, and the messages, for a caller that has another way to send
// them.
type returnedError struct {
	out  []outgoing
	errs []error
}

func (e *returnedError) Error() string   { return errors.Join(e.errs...).Error() }
func (e *returnedError) Unwrap() []error { return e.errs }

// awaitConfirms waits for every confirm and reports which were acks.
func (p *publisher) awaitConfirms(ctx context.Context, confs []*amqp.DeferredConfirmation) ([]bool, error) {
	acked := make([]bool, len(confs))
	for i, dc := range confs {
		ok, err := dc.WaitContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("rabbit: await confirm: %w", err)
		}
		acked[i] = ok
	}
	return acked, nil
}

// unconfirmedOf returns the messages of out whose confirm was not an ack.
func unconfirmedOf(out []outgoing, acked []bool) []outgoing {
	var rest []outgoing
	for i := range out {
		if i >= len(acked) || !acked[i] {
			rest = append(rest, out[i])
		}
	}
	return rest
}

func countFalse(bs []bool) int {
	n := 0
	for _, b := range bs {
		if !b {
			n++
		}
	}
	return n
}

// connectionLost reports whether err, from sending on a channel, means the
// connection failed: the socket refused a write, or the library already
// closed it.
func connectionLost(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, amqp.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// discard forgets ch's session when it is still the current one, so that
// the next publish opens a new connection instead of reusing a failed one
// the library has not closed yet.
func (p *publisher) discard(ch *amqp.Channel) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != ch {
		return
	}
	conn := p.conn
	p.conn, p.ch = nil, nil
	go func() { _ = conn.Close() }() // may wait on the failed socket
}

func (p *publisher) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return nil
	}
	err := p.conn.Close()
	p.conn, p.ch = nil, nil
	if errors.Is(err, amqp.ErrClosed) {
		return nil
	}
	return err
}

// returnTracker collects basic.return frames. RabbitMQ sends a return before
// the confirm of the same message, and the library hands it to an
// unbuffered channel before it processes the confirm; one round trip
// through the tracker's goroutine after the confirms (sync) therefore
// guarantees every return of those messages has been recorded.
type returnTracker struct {
	returns chan amqp.Return
	barrier chan chan struct{}
	done    chan struct{}

	mu       sync.Mutex
	returned map[string]amqp.Return
}

func newReturnTracker(ch *amqp.Channel) *returnTracker {
	rt := &returnTracker{
		returns:  ch.NotifyReturn(make(chan amqp.Return)),
		barrier:  make(chan chan struct{}),
		done:     make(chan struct{}),
		returned: map[string]amqp.Return{},
	}
	go rt.run()
	return rt
}

func (rt *returnTracker) run() {
	defer close(rt.done)
	for {
		select {
		case r, ok := <-rt.returns:
			if !ok {
				return
			}
			rt.mu.Lock()
			rt.returned[r.MessageId] = r
			rt.mu.Unlock()
		case ack := <-rt.barrier:
			close(ack)
		}
	}
}

// sync waits until every return received so far is recorded. It reports
// false when the channel closed.
func (rt *returnTracker) sync() bool {
	ack := make(chan struct{})
	select {
	case rt.barrier <- ack:
		<-ack
		return true
	case <-rt.done:
		return false
	}
}

func (rt *returnTracker) take(id string) (amqp.Return, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	r, ok := rt.returned[id]
	if ok {
		delete(rt.returned, id)
	}
	return r, ok
}
