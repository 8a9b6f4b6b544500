package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/worker"
	"github.com/redrive/redrive/worker/killswitch"
)

// CrashingWorker is the sample worker that crashes now and then;
// StallingWorker the one whose handlers stall now and then; OutageWorker
// the one whose downstream has a planned outage now and then (its kill
// switch pauses it).
const (
	CrashingWorker = "reconciliation-worker"
	StallingWorker = "deal-timeout-worker"
	OutageWorker   = "payout-executor"
)

// Defaults of WorkersConfig.
const (
	DefaultCrashEvery  = 45 * time.Second
	DefaultCrashFor    = 10 * time.Second
	DefaultStallEvery  = 3 * time.Minute
	DefaultStallFor    = 30 * time.Second
	DefaultOutageEvery = 4 * time.Minute
	DefaultOutageFor   = 40 * time.Second
)

// WorkersConfig configures RunWorkers.
type WorkersConfig struct {
	// Broker is shared by the sample workers; the caller closes it.
	Broker broker.Broker
	// Subscriptions are the sample workers' (Stack.Config.Subscriptions()).
	Subscriptions []broker.Subscription
	// Redis receives heartbeats and claim counts.
	Redis redis.Cmdable
	// Registerer exports the workers' metrics; may be nil.
	Registerer prometheus.Registerer
	// HeartbeatInterval and HeartbeatTTL time the heartbeats.
	HeartbeatInterval, HeartbeatTTL time.Duration
	// CrashingWorker (reconciliation-worker) stops without a goodbye every
	// CrashEvery (default 45s), its heartbeat left to expire, and comes
	// back CrashFor later (default 10s). Negative CrashEvery: never.
	CrashEvery, CrashFor time.Duration
	// StallingWorker (deal-timeout-worker) stops handling for StallFor
	// (default 30s) every StallEvery (default 3m; the first stall comes
	// after half of it): its handlers hang while messages keep arriving,
	// so it reads stuck once heartbeat.idle_after passed. Negative
	// StallEvery: never.
	StallEvery, StallFor time.Duration
	// OutageWorker's (payout-executor's) downstream is down for OutageFor
	// (default 40s) every OutageEvery (default 4m; the first after a
	// quarter of it): every call fails transiently, its kill switch trips
	// and the worker reads PAUSED until a probe succeeds. Negative
	// OutageEvery: never.
	OutageEvery, OutageFor time.Duration
	// KillSwitches are the workers' kill switches
	// (config.Config.KillSwitches).
	KillSwitches map[string]killswitch.Config
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// RunWorkers runs the sample workers with Handler until ctx ends: the
// CrashingWorker on its own, crashing now and then, the others in one
// worker.Runtime. It returns the first error that stops a worker.
func RunWorkers(ctx context.Context, cfg WorkersConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CrashEvery == 0 {
		cfg.CrashEvery = DefaultCrashEvery
	}
	if cfg.CrashFor <= 0 {
		cfg.CrashFor = DefaultCrashFor
	}
	if cfg.StallEvery == 0 {
		cfg.StallEvery = DefaultStallEvery
	}
	if cfg.StallFor <= 0 {
		cfg.StallFor = DefaultStallFor
	}
	if cfg.OutageEvery == 0 {
		cfg.OutageEvery = DefaultOutageEvery
	}
	if cfg.OutageFor <= 0 {
		cfg.OutageFor = DefaultOutageFor
	}
	wc := worker.Config{NoSignals: true, Logger: cfg.Logger, ClaimsRedis: cfg.Redis,
		KillSwitches: cfg.KillSwitches, Registerer: cfg.Registerer}
	var steady, crashing []broker.Subscription
	handlers := worker.Handlers{}
	for _, s := range cfg.Subscriptions {
		if s.Group == CrashingWorker && cfg.CrashEvery > 0 {
			crashing = append(crashing, s)
			continue
		}
		steady = append(steady, s)
		handlers[s.Group] = Handler
		if s.Group == StallingWorker && cfg.StallEvery > 0 {
			handlers[s.Group] = newStaller(cfg.StallEvery, cfg.StallFor, cfg.Logger).wrap(Handler)
		}
		if s.Group == OutageWorker && cfg.OutageEvery > 0 {
			handlers[s.Group] = newOutage(cfg.OutageEvery, cfg.OutageFor, cfg.Logger).wrap(Handler)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	if len(steady) > 0 {
		hc := wc
		hc.HeartbeatRedis, hc.HeartbeatInterval, hc.HeartbeatTTL = cfg.Redis, cfg.HeartbeatInterval, cfg.HeartbeatTTL
		rt, err := worker.New(cfg.Broker, steady, hc)
		if err != nil {
			return fmt.Errorf("dev: workers: %w", err)
		}
		wg.Go(func() {
			if err := rt.Run(ctx, handlers); err != nil {
				cancel(err)
			}
		})
	}
	for _, s := range crashing {
		wg.Go(func() {
			if err := crashLoop(ctx, cfg, s, wc); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// crashLoop runs the worker of sub, stopping it every cfg.CrashEvery as a
// crashed process would look from outside (its heartbeat stops, no
// SHUTTING_DOWN) and restarting it cfg.CrashFor later.
func crashLoop(ctx context.Context, cfg WorkersConfig, sub broker.Subscription, wc worker.Config) error {
	hc := heartbeat.PublisherConfig{Type: sub.Group, Interval: cfg.HeartbeatInterval, TTL: cfg.HeartbeatTTL, Logger: cfg.Logger}
	if lp, ok := cfg.Broker.(driver.Prober); ok {
		hc.Lag = func(ctx context.Context) (int64, error) { return lp.ConsumerLag(ctx, sub.Topic, sub.Group) }
	}
	pub, err := heartbeat.NewPublisher(cfg.Redis, hc)
	if err != nil {
		return fmt.Errorf("dev: heartbeat of %s: %w", sub.Group, err)
	}
	h := func(ctx context.Context, d *broker.Delivery) error {
		err := Handler(ctx, d)
		pub.MessageHandled(time.Now())
		return err
	}
	for {
		rctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { beat(rctx, pub, cfg.HeartbeatInterval) })
		rt, err := worker.New(cfg.Broker, []broker.Subscription{sub}, wc)
		if err != nil {
			stop()
			wg.Wait()
			return fmt.Errorf("dev: worker %s: %w", sub.Group, err)
		}
		errc := make(chan error, 1)
		wg.Go(func() { errc <- rt.Run(rctx, worker.Handlers{sub.Group: h}) })
		var runErr error
		select {
		case <-ctx.Done():
		case runErr = <-errc:
		case <-time.After(cfg.CrashEvery):
		}
		stop()
		wg.Wait()
		if runErr != nil {
			return runErr
		}
		if ctx.Err() != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = pub.Deregister(dctx) // a clean exit leaves the table
			cancel()
			return nil
		}
		cfg.Logger.Warn("dev: "+sub.Group+" crashed (simulated): its heartbeat stops; restarting", "in", cfg.CrashFor)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.CrashFor):
		}
		cfg.Logger.Info("dev: " + sub.Group + " restarted")
	}
}

// beat writes pub's heartbeat every interval until ctx ends, and nothing
// when it ends: a crash says no goodbye.
func beat(ctx context.Context, pub *heartbeat.Publisher, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		// Not cut short by ctx, so that a crash is not logged as a Redis
		// outage; Redis trouble is logged by the publisher.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interval)
		_ = pub.Beat(bctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// outage makes every call of a handler fail transiently for a while every
// so often, as when its downstream is down for maintenance.
type outage struct {
	every, dur time.Duration
	log        *slog.Logger

	mu          sync.Mutex
	next, until time.Time
}

func newOutage(every, dur time.Duration, log *slog.Logger) *outage {
	return &outage{every: every, dur: dur, log: log, next: time.Now().Add(every / 4)}
}

// errOutage is the failure of every call during an outage.
var errOutage = errors.New("bank API unavailable: planned maintenance (simulated)")

// wrap returns h failing with errOutage while an outage lasts.
func (o *outage) wrap(h broker.Handler) broker.Handler {
	return func(ctx context.Context, d *broker.Delivery) error {
		o.mu.Lock()
		now := time.Now()
		if !now.Before(o.next) {
			o.until, o.next = now.Add(o.dur), now.Add(o.every)
			o.log.Warn("dev: the downstream of "+OutageWorker+" is down (simulated): its kill switch will pause it", "for", o.dur)
		}
		down := now.Before(o.until)
		o.mu.Unlock()
		if down {
			return errOutage
		}
		return h(ctx, d)
	}
}

// staller makes a handler hang for a while every so often: the
// StallingWorker's handlers all wait while a stall lasts.
type staller struct {
	every, dur time.Duration
	log        *slog.Logger

	mu          sync.Mutex
	next, until time.Time
}

func newStaller(every, dur time.Duration, log *slog.Logger) *staller {
	return &staller{every: every, dur: dur, log: log, next: time.Now().Add(every / 2)}
}

// wrap returns h behind the stall gate.
func (s *staller) wrap(h broker.Handler) broker.Handler {
	return func(ctx context.Context, d *broker.Delivery) error {
		s.mu.Lock()
		if now := time.Now(); !now.Before(s.next) {
			s.until, s.next = now.Add(s.dur), now.Add(s.every)
			s.log.Warn("dev: "+StallingWorker+" stalls (simulated): its handlers hang while messages wait", "for", s.dur)
		}
		until := s.until
		s.mu.Unlock()
		if wait := time.Until(until); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		return h(ctx, d)
	}
}
