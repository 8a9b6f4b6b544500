package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// Errors of Pauses.
var (
	// ErrUnknownType: no worker of that name ever beat in this Redis (a
	// typo, most likely); nothing is paused.
	ErrUnknownType = errors.New("heartbeat: no such worker type")
	// ErrNotPaused: Resume of a worker type that is not paused.
	ErrNotPaused = errors.New("heartbeat: worker is not paused")
	// ErrBadReason: a pause reason that is empty, too long or holds
	// control characters.
	ErrBadReason = errors.New("heartbeat: bad pause reason")
)

// MaxPauseReasonLen bounds an operator's pause reason, in bytes.
const MaxPauseReasonLen = 200

// Pause is an operator's pause of every instance of a worker type.
type Pause struct {
	// Type is the worker paused.
	Type string
	// Actor paused it and said why.
	Actor, Reason string
	// At is when it was paused.
	At time.Time
}

// Pauses reads and writes operator pauses: one hash per paused worker
// type (Keys.Paused) without expiry, so that a pause outlives restarts of
// the instances until someone resumes. Every pause and resume is appended
// to the audit stream (Keys.Audit) as Retire's records are.
type Pauses struct {
	RDB  redis.Cmdable
	Keys Keys
}

// CheckPauseReason returns nil when reason is fit for a pause: not blank,
// at most MaxPauseReasonLen bytes of UTF-8 without control characters.
func CheckPauseReason(reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return fmt.Errorf("%w: required: say why the worker is paused", ErrBadReason)
	case len(reason) > MaxPauseReasonLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrBadReason, MaxPauseReasonLen)
	case !utf8.ValidString(reason) || strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: holds invalid UTF-8 or a control character", ErrBadReason)
	}
	return nil
}

// Pause pauses every instance of typ (each stops taking messages at its
// next poll) and returns the pause. Pausing a paused worker replaces its
// reason. A typ that never beat is refused (ErrUnknownType).
func (p Pauses) Pause(ctx context.Context, typ, actor, reason string) (Pause, error) {
	pa := Pause{Type: typ, Actor: actor, Reason: reason, At: time.Now()}
	if err := CheckPauseReason(reason); err != nil {
		return pa, err
	}
	known, err := p.RDB.SIsMember(ctx, p.Keys.Types(), typ).Result()
	if err != nil {
		return pa, fmt.Errorf("%w: read %s: %w", ErrUnavailable, p.Keys.Types(), err)
	}
	if !known {
		return pa, fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	_, err = p.RDB.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, p.Keys.Paused(typ), "actor", actor, "reason", reason, "at", unixString(pa.At))
		p.audit(ctx, pipe, "pause", pa)
		return nil
	})
	if err != nil {
		return pa, fmt.Errorf("%w: pause %s: %w", ErrUnavailable, typ, err)
	}
	return pa, nil
}

// Resume lifts the pause of typ and returns it (ErrNotPaused when there
// is none); actor is audited as the one who resumed.
func (p Pauses) Resume(ctx context.Context, typ, actor string) (Pause, error) {
	pa, ok, err := p.Get(ctx, typ)
	if err != nil {
		return pa, err
	}
	if !ok {
		return pa, fmt.Errorf("%w: %q", ErrNotPaused, typ)
	}
	_, err = p.RDB.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, p.Keys.Paused(typ))
		p.audit(ctx, pipe, "resume", Pause{Type: typ, Actor: actor, Reason: pa.Reason, At: time.Now()})
		return nil
	})
	if err != nil {
		return pa, fmt.Errorf("%w: resume %s: %w", ErrUnavailable, typ, err)
	}
	return pa, nil
}

// Get returns the pause of typ, if it is paused.
func (p Pauses) Get(ctx context.Context, typ string) (Pause, bool, error) {
	m, err := p.RDB.HGetAll(ctx, p.Keys.Paused(typ)).Result()
	if err != nil {
		return Pause{}, false, fmt.Errorf("%w: read %s: %w", ErrUnavailable, p.Keys.Paused(typ), err)
	}
	if len(m) == 0 {
		return Pause{}, false, nil
	}
	pa := Pause{Type: typ, Actor: m["actor"], Reason: m["reason"]}
	if f, err := strconv.ParseFloat(m["at"], 64); err == nil {
		pa.At = fromUnixSeconds(f)
	}
	return pa, true, nil
}

func (p Pauses) audit(ctx context.Context, pipe redis.Pipeliner, action string, pa Pause) {
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: p.Keys.Audit(), MaxLen: auditLen, Approx: true, Values: map[string]any{
		"action": action, "at": unixString(pa.At), "type": pa.Type, "actor": pa.Actor, "reason": pa.Reason,
	}})
}
