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

	"github.com/redrive/redrive/internal/termtext"
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
	// ErrBadActor: an actor (who paused, resumed or retired) that is
	// empty, too long or holds control characters: the audit must name
	// someone, in a name a terminal prints as it is.
	ErrBadActor = errors.New("heartbeat: bad actor")
)

// MaxPauseReasonLen bounds an operator's pause reason, in bytes.
const MaxPauseReasonLen = 200

// MaxActorLen bounds an actor's name, in bytes.
const MaxActorLen = 200

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
	return checkText(ErrBadReason, reason, MaxPauseReasonLen, "say why the worker is paused")
}

// CheckActor returns nil when actor can name who changed the fleet in the
// audit: not blank, at most MaxActorLen bytes of UTF-8 without control or
// bidirectional characters, no space at either end.
func CheckActor(actor string) error {
	if err := checkText(ErrBadActor, actor, MaxActorLen, "name who does it"); err != nil {
		return err
	}
	if strings.TrimSpace(actor) != actor {
		return fmt.Errorf("%w: %q has white space at its start or end", ErrBadActor, actor)
	}
	return nil
}

// checkText checks an operator's text for the audit: not blank (need
// says what it is for), at most max bytes of UTF-8, no control or
// bidirectional character.
func checkText(sentinel error, s string, max int, need string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%w: required: %s", sentinel, need)
	case len(s) > max:
		return fmt.Errorf("%w: longer than %d bytes", sentinel, max)
	case !utf8.ValidString(s) || !termtext.IsPrintable(s):
		return fmt.Errorf("%w: holds invalid UTF-8, a control or a bidirectional character", sentinel)
	}
	return nil
}

// Pause pauses every instance of typ (each stops taking messages at its
// next poll) and returns the pause. Pausing a paused worker replaces its
// reason. A typ that never beat is refused (ErrUnknownType).
func (p Pauses) Pause(ctx context.Context, typ, actor, reason string) (Pause, error) {
	pa := Pause{Type: typ, Actor: actor, Reason: reason, At: time.Now()}
	if err := CheckActor(actor); err != nil {
		return pa, err
	}
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
	if err := CheckActor(actor); err != nil {
		return Pause{Type: typ}, err
	}
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

// Get returns the pause of typ, if it is paused. The hash is read as
// anyone may have written it: its three fields only (HMGET), the actor
// and reason cut to their bounds, a time that is no time left zero; a
// key that is not a hash reads as a pause without actor or reason (the
// safe side: someone meant to pause), as does a hash without the fields.
func (p Pauses) Get(ctx context.Context, typ string) (Pause, bool, error) {
	key := p.Keys.Paused(typ)
	var exists *redis.IntCmd
	var fields *redis.SliceCmd
	_, err := p.RDB.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		exists = pipe.Exists(ctx, key)
		fields = pipe.HMGet(ctx, key, "actor", "reason", "at")
		return nil
	})
	if err != nil && !isWrongType(err) {
		return Pause{}, false, fmt.Errorf("%w: read %s: %w", ErrUnavailable, key, err)
	}
	if exists.Val() == 0 {
		return Pause{}, false, nil
	}
	v := fields.Val()
	str := func(i int) string {
		if i < len(v) {
			s, _ := v[i].(string)
			return s
		}
		return ""
	}
	pa := Pause{Type: typ, Actor: cut(str(0), MaxActorLen), Reason: cut(str(1), MaxPauseReasonLen)}
	if f, err := strconv.ParseFloat(str(2), 64); err == nil {
		pa.At, _ = scoreTime(f, time.Now())
	}
	return pa, true, nil
}

func (p Pauses) audit(ctx context.Context, pipe redis.Pipeliner, action string, pa Pause) {
	pipe.XAdd(ctx, &redis.XAddArgs{Stream: p.Keys.Audit(), MaxLen: auditLen, Approx: true, Values: map[string]any{
		"action": action, "at": unixString(pa.At), "type": pa.Type, "actor": pa.Actor, "reason": pa.Reason,
	}})
}
