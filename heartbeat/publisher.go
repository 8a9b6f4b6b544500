package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/internal/sampling"
)

// shutdownWriteTimeout bounds the SHUTTING_DOWN write Run makes after its
// context ended.
const shutdownWriteTimeout = 5 * time.Second

// Publisher writes one worker instance's heartbeat to Redis. Its methods
// are safe for concurrent use; MessageHandled and SetLag are lock-free and
// cheap enough to call for every message.
type Publisher struct {
	rdb     redis.Cmdable
	cfg     PublisherConfig
	keys    Keys
	key     string
	started time.Time

	lastMsg atomic.Int64 // unix nanoseconds of the last handled message; 0 = none
	lag     atomic.Int64
	down    sampling.Outage            // Redis unreachable
	lagDown sampling.Outage            // cfg.Lag failing
	pause   atomic.Pointer[pauseState] // nil while running
	succ    *successor                 // nil unless the instance is hostname-pid

	now    func() time.Time
	onBeat func(Status, error) // test hook, called after each beat of Run
}

// NewPublisher returns a publisher for cfg (defaults filled in, then
// validated) writing through rdb, a *redis.Client or any other
// redis.Cmdable. It does not contact Redis.
func NewPublisher(rdb redis.Cmdable, cfg PublisherConfig) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	keys := Keys{Prefix: cfg.Prefix}
	return &Publisher{
		rdb:     rdb,
		cfg:     cfg,
		keys:    keys,
		key:     keys.Heartbeat(cfg.Type, cfg.Instance),
		started: time.Now(),
		now:     time.Now,
		succ:    newSuccessor(cfg.Instance),
	}, nil
}

// Type returns the worker type the publisher beats for.
func (p *Publisher) Type() string { return p.cfg.Type }

// Instance returns the instance id the publisher beats for.
func (p *Publisher) Instance() string { return p.cfg.Instance }

// Key returns the heartbeat key, "worker:{type}:{instance}" after the
// prefix.
func (p *Publisher) Key() string { return p.key }

// MessageHandled records that the worker handled a message at at. Later
// calls with earlier times are ignored, so concurrent handlers may report
// in any order.
func (p *Publisher) MessageHandled(at time.Time) {
	n := at.UnixNano()
	for {
		old := p.lastMsg.Load()
		if n <= old || p.lastMsg.CompareAndSwap(old, n) {
			return
		}
	}
}

// pauseState is what a PAUSED beat says.
type pauseState struct {
	by, reason string
	nextProbe  time.Time
}

// SetPaused makes the next beats say PAUSED, by (PausedByOperator or
// PausedByKillSwitch) for reason, probing next at nextProbe (zero: no
// probe planned). SetRunning ends it.
func (p *Publisher) SetPaused(by, reason string, nextProbe time.Time) {
	p.pause.Store(&pauseState{by: by, reason: reason, nextProbe: nextProbe})
}

// SetRunning makes the next beats say RUNNING again.
func (p *Publisher) SetRunning() { p.pause.Store(nil) }

// SetLag records the consumer lag the next beats report.
func (p *Publisher) SetLag(n int64) { p.lag.Store(n) }

// Snapshot returns the heartbeat the publisher would write now with status;
// RUNNING reads PAUSED while SetPaused holds.
func (p *Publisher) Snapshot(status Status) Heartbeat {
	hb := Heartbeat{
		Timestamp:   p.now(),
		Status:      status,
		ConsumerLag: p.lag.Load(),
		StartedAt:   p.started,
	}
	if n := p.lastMsg.Load(); n != 0 {
		hb.LastMessageAt = time.Unix(0, n)
	}
	if p.cfg.Endpoint != nil {
		hb.Endpoint = p.cfg.Endpoint()
	}
	if ps := p.pause.Load(); ps != nil && status == StatusRunning {
		hb.Status, hb.PausedBy, hb.PauseReason, hb.NextProbeAt = StatusPaused, ps.by, ps.reason, ps.nextProbe
	}
	return hb
}

// Beat writes one RUNNING (or PAUSED, see SetPaused) heartbeat now: the key with its TTL and the
// registry update, in one round trip. An error is returned (and logged
// once per outage) when Redis cannot be reached; the next successful beat
// logs the recovery.
func (p *Publisher) Beat(ctx context.Context) error {
	p.measureLag(ctx)
	hb := p.Snapshot(StatusRunning)
	data, err := json.Marshal(hb)
	if err != nil {
		return fmt.Errorf("heartbeat: encode %s: %w", p.key, err)
	}
	var stale *redis.ZSliceCmd
	_, err = p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, p.key, data, p.cfg.TTL)
		p.register(ctx, pipe, hb.Timestamp)
		pipe.HDel(ctx, p.keys.Stopping(p.cfg.Type), p.cfg.Instance)
		stale = p.staleQuery(ctx, pipe, hb.Timestamp)
		return nil
	})
	if err = p.observe("beat", err); err == nil {
		p.retirePredecessors(ctx, stale)
	}
	return err
}

// Shutdown writes a SHUTTING_DOWN heartbeat with the shutdown TTL and
// records when the shutdown began (kept from the first call). Run calls it
// when its context ends.
func (p *Publisher) Shutdown(ctx context.Context) error {
	hb := p.Snapshot(StatusShuttingDown)
	data, err := json.Marshal(hb)
	if err != nil {
		return fmt.Errorf("heartbeat: encode %s: %w", p.key, err)
	}
	stopping := p.keys.Stopping(p.cfg.Type)
	_, err = p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, p.key, data, p.cfg.ShutdownTTL)
		p.register(ctx, pipe, hb.Timestamp)
		pipe.HSetNX(ctx, stopping, p.cfg.Instance, unixString(hb.Timestamp))
		pipe.Expire(ctx, stopping, p.cfg.ForgetAfter)
		return nil
	})
	return p.observe("shutdown", err)
}

// Deregister removes the instance from Redis: its key, its registry entry
// and its shutdown mark. A process that drained and exits cleanly calls it
// after Run returned, so the monitor forgets it instead of reporting it
// MISSING or stuck in SHUTTING_DOWN.
func (p *Publisher) Deregister(ctx context.Context) error {
	_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, p.key)
		pipe.ZRem(ctx, p.keys.Registry(p.cfg.Type), p.cfg.Instance)
		pipe.HDel(ctx, p.keys.Stopping(p.cfg.Type), p.cfg.Instance)
		return nil
	})
	return p.observe("deregister", err)
}

// Run beats every Interval, starting now, until ctx ends; then it writes
// SHUTTING_DOWN (bounded by 5 s) and returns that write's error, if any.
// Beats that fail do not stop it: the worker keeps working without Redis.
func (p *Publisher) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		bctx, cancel := context.WithTimeout(ctx, p.cfg.Interval)
		err := p.Beat(bctx)
		cancel()
		if p.onBeat != nil && ctx.Err() == nil {
			p.onBeat(StatusRunning, err)
		}
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownWriteTimeout)
			defer cancel()
			err := p.Shutdown(sctx)
			if p.onBeat != nil {
				p.onBeat(StatusShuttingDown, err)
			}
			return err
		case <-t.C:
		}
	}
}

// measureLag asks cfg.Lag, when set, for the lag the next snapshot
// reports; a failure keeps the last value.
func (p *Publisher) measureLag(ctx context.Context) {
	if p.cfg.Lag == nil {
		return
	}
	// Half the interval at most: a slow measurement must not cost the beat.
	lctx, cancel := context.WithTimeout(ctx, p.cfg.Interval/2)
	defer cancel()
	n, err := p.cfg.Lag(lctx)
	if err == nil {
		p.lag.Store(max(n, 0))
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return // stopping, not an outage
	}
	switch began, ended := p.lagDown.Observe(err); {
	case ended:
		p.cfg.Logger.Info("heartbeat: consumer lag measurable again", "type", p.cfg.Type, "instance", p.cfg.Instance)
	case began:
		p.cfg.Logger.Warn("heartbeat: consumer lag cannot be measured; heartbeats report the last known lag",
			"type", p.cfg.Type, "instance", p.cfg.Instance, "err", err)
	}
}

// register adds the registry update of a beat at now to pipe.
func (p *Publisher) register(ctx context.Context, pipe redis.Pipeliner, now time.Time) {
	reg := p.keys.Registry(p.cfg.Type)
	pipe.ZAdd(ctx, reg, redis.Z{Score: unixSeconds(now), Member: p.cfg.Instance})
	pipe.ZRemRangeByScore(ctx, reg, "-inf", "("+unixString(now.Add(-p.cfg.ForgetAfter)))
	pipe.Expire(ctx, reg, p.cfg.ForgetAfter)
	pipe.SAdd(ctx, p.keys.Types(), p.cfg.Type)
}

// observe wraps err naming op and logs the first failure of an outage and
// the recovery after it. A cancelled context is not an outage; a deadline
// exceeded (Redis too slow to answer) is.
func (p *Publisher) observe(op string, err error) error {
	if err != nil {
		err = fmt.Errorf("heartbeat: %s %s: %w", op, p.key, err)
	}
	switch began, ended := p.down.Observe(err); {
	case ended:
		p.cfg.Logger.Info("heartbeat: redis reachable again, heartbeats resumed",
			"type", p.cfg.Type, "instance", p.cfg.Instance)
	case began:
		p.cfg.Logger.Warn("heartbeat: redis unreachable; the worker keeps running and heartbeats resume when redis is back",
			"type", p.cfg.Type, "instance", p.cfg.Instance, "err", err)
	}
	return err
}

// unixSeconds is t as fractional unix seconds (millisecond precision).
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }

func unixString(t time.Time) string { return strconv.FormatFloat(unixSeconds(t), 'f', 3, 64) }

func fromUnixSeconds(s float64) time.Time { return time.UnixMilli(int64(s*1e3 + 0.5)) }
