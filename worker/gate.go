package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/worker/killswitch"
)

// errStopping is the cause of a hand-back while the runtime stops.
var errStopping = errors.New("worker: shutting down")

// gate decides whether one worker's handler may take a message: not while
// an operator paused the worker (polled from Redis), and not while its
// kill switch is open. A handler call waits at the gate; a call that
// waits when the runtime stops, and one that failed while the kill switch
// was tripping, is handed back (broker.Requeue) without spending an
// attempt.
type gate struct {
	sub      broker.Subscription
	sw       *killswitch.Switch // nil: no kill switch
	pauses   *heartbeat.Pauses  // nil: no operator pause (no Redis)
	poll     time.Duration
	pub      *heartbeat.Publisher // nil: no heartbeat
	pauser   driver.Pauser        // nil: the broker cannot stop consuming
	trips    prometheus.Counter   // nil: no metrics
	log      *slog.Logger
	stopping <-chan struct{}

	mu       sync.Mutex
	op       *heartbeat.Pause // the operator's pause, nil when none
	changed  chan struct{}    // closed (and replaced) when op changes
	tripText string           // why the kill switch last tripped
	redisErr bool             // the last poll failed (logged once)
	held     bool             // the consumer is paused (pauser)
	probeAt  *time.Timer      // resumes consuming when the switch may probe
}

func newGate(sub broker.Subscription, sw *killswitch.Switch, pauses *heartbeat.Pauses, poll time.Duration,
	pub *heartbeat.Publisher, trips prometheus.Counter, log *slog.Logger, stopping <-chan struct{}) *gate {
	if poll <= 0 {
		poll = DefaultPausePoll
	}
	return &gate{sub: sub, sw: sw, pauses: pauses, poll: poll, pub: pub, trips: trips, stopping: stopping,
		log: log.With("worker", sub.Group), changed: make(chan struct{})}
}

// wrap returns h behind the gate (h itself when the gate has nothing to
// hold it for).
func (g *gate) wrap(h broker.Handler) broker.Handler {
	if g.sw == nil && g.pauses == nil {
		return h
	}
	return func(ctx context.Context, d *broker.Delivery) error {
		if err := g.enter(ctx); err != nil {
			return broker.Requeue(err)
		}
		return g.leave(d, h(ctx, d))
	}
}

// enter waits until the handler may take a message; it returns an error
// when ctx ends or the runtime stops first.
func (g *gate) enter(ctx context.Context) error {
	for {
		g.mu.Lock()
		op, changed := g.op, g.changed
		g.mu.Unlock()
		var wait <-chan time.Time
		var timer *time.Timer
		if op == nil {
			if g.sw == nil {
				return nil
			}
			ok, d, tr := g.sw.Allow()
			g.report(tr)
			if ok {
				return nil
			}
			timer = time.NewTimer(d)
			wait = timer.C
		}
		var err error
		select {
		case <-wait:
		case <-changed:
		case <-ctx.Done():
			err = ctx.Err()
		case <-g.stopping:
			err = errStopping
		}
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return err
		}
	}
}

// leave records the outcome of a call the gate let through and returns
// the error the broker acts on: a transient failure that finds the kill
// switch tripped is handed back.
func (g *gate) leave(d *broker.Delivery, err error) error {
	if g.sw == nil {
		return err
	}
	o := g.outcome(d, err)
	g.report(g.sw.Record(o))
	if o == killswitch.Transient && g.sw.Failing() {
		return broker.Requeue(err)
	}
	return err
}

// outcome is how the kill switch counts a call's result: failures that say
// nothing about the downstream (Permanent, non-retriable classes, hand-backs)
// are not counted.
func (g *gate) outcome(d *broker.Delivery, err error) killswitch.Outcome {
	switch {
	case err == nil:
		return killswitch.Success
	case broker.IsRequeue(err), broker.IsPermanent(err):
		return killswitch.Ignored
	}
	if o := driver.Decide(g.sub, d, err, time.Now()); !o.Retry && o.Reason == driver.ReasonPermanent {
		return killswitch.Ignored
	}
	return killswitch.Transient
}

// report logs a kill switch transition, counts trips and updates the
// heartbeat.
func (g *gate) report(tr killswitch.Transition) {
	if !tr.Changed() {
		return
	}
	switch {
	case tr.From == killswitch.Closed && tr.To == killswitch.Open:
		cfg := g.sw.Config()
		g.mu.Lock()
		g.tripText = fmt.Sprintf("%d of %d calls failed within %s", tr.Failures, tr.Calls, cfg.Window)
		g.mu.Unlock()
		g.log.Warn("worker: kill switch tripped; taking no message until the probe", "failures", tr.Failures,
			"calls", tr.Calls, "window", cfg.Window, "next_probe", tr.Until.Sub(tr.At))
		if g.trips != nil {
			g.trips.Inc()
		}
	case tr.To == killswitch.HalfOpen:
		g.log.Info("worker: kill switch half open; probing with one message")
	case tr.From == killswitch.HalfOpen && tr.To == killswitch.Open:
		g.log.Warn("worker: kill switch probe failed; open again", "next_probe", tr.Until.Sub(tr.At))
		if g.trips != nil {
			g.trips.Inc()
		}
	case tr.To == killswitch.Closed:
		g.log.Info("worker: kill switch closed; taking messages again")
	}
	g.publish()
}

// publish makes the heartbeat and the consumer follow the gate: PAUSED by
// the operator, PAUSED by the kill switch, or RUNNING; the consumer stops
// while the worker is paused or its switch is open before its probe time,
// and takes deliveries again for the probe.
func (g *gate) publish() {
	g.hold()
	if g.pub == nil {
		return
	}
	g.mu.Lock()
	op, why := g.op, g.tripText
	g.mu.Unlock()
	if op != nil {
		g.pub.SetPaused(heartbeat.PausedByOperator, op.Reason, time.Time{})
		return
	}
	if g.sw != nil {
		switch st, until := g.sw.State(); st {
		case killswitch.Open:
			g.pub.SetPaused(heartbeat.PausedByKillSwitch, why, until)
			return
		case killswitch.HalfOpen:
			g.pub.SetPaused(heartbeat.PausedByKillSwitch, why+"; probing", time.Now())
			return
		}
	}
	g.pub.SetRunning()
}

// hold pauses or resumes the consumer (when the broker can) as the gate
// says, and plans the resume at the kill switch's probe time.
func (g *gate) hold() {
	if g.pauser == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	held := g.op != nil
	if g.probeAt != nil {
		g.probeAt.Stop()
		g.probeAt = nil
	}
	if g.sw != nil && !held {
		if st, until := g.sw.State(); st == killswitch.Open {
			if d := time.Until(until); d > 0 {
				held = true
				g.probeAt = time.AfterFunc(d, g.hold)
			}
		}
	}
	if held == g.held {
		return
	}
	g.held = held
	if held {
		g.pauser.PauseConsume(g.sub.Topic, g.sub.Group)
	} else {
		g.pauser.ResumeConsume(g.sub.Topic, g.sub.Group)
	}
}

// watch reads the operator's pause every poll interval until ctx ends.
// Run calls refresh once before consuming, so that a paused worker takes
// nothing after a restart.
func (g *gate) watch(ctx context.Context) {
	t := time.NewTicker(g.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.refresh(ctx)
		}
	}
}

// refresh reads the operator's pause once. When Redis cannot be read the
// last known state holds (logged once per outage).
func (g *gate) refresh(ctx context.Context) {
	if g.pauses == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, max(g.poll, time.Second))
	p, paused, err := g.pauses.Get(rctx, g.sub.Group)
	cancel()
	g.mu.Lock()
	if err != nil {
		if !g.redisErr && ctx.Err() == nil {
			g.log.Warn("worker: cannot read the operator pause from redis; keeping the last known state", "paused", g.op != nil, "error", err)
		}
		g.redisErr = err != nil && ctx.Err() == nil
		g.mu.Unlock()
		return
	}
	g.redisErr = false
	was := g.op
	if paused == (was != nil) && (!paused || was.Reason == p.Reason) {
		g.mu.Unlock()
		return
	}
	if paused {
		g.op = &p
	} else {
		g.op = nil
	}
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
	if paused {
		g.log.Warn("worker: paused by an operator; taking no message until resumed", "actor", p.Actor, "reason", p.Reason)
	} else {
		g.log.Info("worker: resumed by an operator; taking messages again")
	}
	g.publish()
}
