package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors of Retire.
var (
	// ErrNoInstance: the registry has no such instance of that type.
	ErrNoInstance = errors.New("heartbeat: no such worker instance")
	// ErrInstanceRunning: the instance still beats RUNNING; its next beat
	// would bring it back, so it is not retired.
	ErrInstanceRunning = errors.New("heartbeat: worker instance is still running")
)

// auditLen bounds the audit stream (approximately: XADD MAXLEN ~).
const auditLen = 10000

// Retirement is one audit record of Retire.
type Retirement struct {
	// At is when the instance was retired.
	At time.Time
	// Type and Instance name it.
	Type, Instance string
	// Actor retired it and said why.
	Actor, Reason string
	// LastSeen is when it last beat (zero when unknown).
	LastSeen time.Time
}

// Retire removes a vanished instance of typ from the registry, with its
// heartbeat key and shutdown mark, so that the monitor stops reporting it
// (and its WorkerHeartbeatMissing or WorkerShutdownStuck alert resolves),
// and appends who did it and why to the audit stream (Keys.Audit, the last
// 10,000 records). An instance that still beats RUNNING is refused
// (ErrInstanceRunning); one that shut down, or whose key expired, is
// retired. An instance restarted under the same configured identity
// (heartbeat.instance) needs no retiring: it takes over its own key.
func Retire(ctx context.Context, rdb redis.Cmdable, keys Keys, typ, instance, actor, reason string) (Retirement, error) {
	r := Retirement{At: time.Now(), Type: typ, Instance: instance, Actor: actor, Reason: reason}
	if err := CheckActor(actor); err != nil {
		return r, err
	}
	if err := checkText(ErrBadReason, reason, MaxPauseReasonLen, "say why it is retired"); err != nil {
		return r, err
	}
	var reg, disc *redis.FloatCmd
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		reg = pipe.ZScore(ctx, keys.Registry(typ), instance)
		disc = pipe.ZScore(ctx, keys.Discovered(typ), instance)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return r, fmt.Errorf("%w: read %s: %w", ErrUnavailable, keys.Registry(typ), err)
	}
	score, err := reg.Result()
	if err != nil {
		if score, err = disc.Result(); err != nil {
			return r, fmt.Errorf("%w: %s/%s", ErrNoInstance, typ, instance)
		}
	}
	r.LastSeen, _ = scoreTime(score, r.At) // zero when it is no time
	key := keys.Heartbeat(typ, instance)
	raw, err := rdb.GetRange(ctx, key, 0, MaxValueLen).Result()
	switch {
	case isWrongType(err), err == nil && raw == "":
	case err != nil:
		return r, fmt.Errorf("%w: read %s: %w", ErrUnavailable, key, err)
	default:
		if hb, err := decodeHeartbeat(raw, r.At); err == nil && hb.Status == StatusRunning {
			return r, fmt.Errorf("%w: %s/%s beat %s ago", ErrInstanceRunning, typ, instance, short(time.Since(hb.Timestamp)))
		}
	}
	_, err = rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.ZRem(ctx, keys.Registry(typ), instance)
		pipe.ZRem(ctx, keys.Discovered(typ), instance)
		pipe.HDel(ctx, keys.Stopping(typ), instance)
		pipe.Del(ctx, key)
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: keys.Audit(), MaxLen: auditLen, Approx: true, Values: map[string]any{
			"action": "retire", "at": unixString(r.At), "type": typ, "instance": instance,
			"actor": actor, "reason": reason, "last_seen": unixString(r.LastSeen),
		}})
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("%w: retire %s/%s: %w", ErrUnavailable, typ, instance, err)
	}
	return r, nil
}

// Retirements returns the retirements among the last n audit records
// (at most 10,000, the stream's length), newest first (the stream holds
// pauses and resumes too). Fields are cut to their bounds and times that
// are no time are zero: the stream is read as anyone may have written it.
func Retirements(ctx context.Context, rdb redis.Cmdable, keys Keys, n int64) ([]Retirement, error) {
	n = min(n, auditLen)
	msgs, err := rdb.XRevRangeN(ctx, keys.Audit(), "+", "-", n).Result()
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, keys.Audit(), err)
	}
	now := time.Now()
	out := make([]Retirement, 0, len(msgs))
	for _, m := range msgs {
		str := func(k string) string { s, _ := m.Values[k].(string); return s }
		if a := str("action"); a != "" && a != "retire" {
			continue
		}
		r := Retirement{Type: cut(str("type"), MaxNameLen), Instance: cut(str("instance"), MaxNameLen),
			Actor: cut(str("actor"), MaxActorLen), Reason: cut(str("reason"), MaxPauseReasonLen),
			At: auditTime(str("at"), now), LastSeen: auditTime(str("last_seen"), now)}
		out = append(out, r)
	}
	return out, nil
}

// auditTime reads a time of the audit stream (unix seconds); zero when it
// is none.
func auditTime(s string, now time.Time) time.Time {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}
	}
	t, _ := scoreTime(f, now)
	return t
}
