package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxPredecessors bounds the stale registry entries one beat looks at.
const maxPredecessors = 100

// successor is what a publisher whose instance is this process's
// hostname-pid needs to retire its dead predecessors on the same host.
type successor struct {
	host  string // "hostname-": the prefix of this host's default instances
	self  int    // this process's pid
	alive func(pid int) bool
}

// newSuccessor returns the successor of a publisher of instance, nil when
// instance is not this process's default one (a configured
// heartbeat.instance takes over its own key instead).
func newSuccessor(instance string) *successor {
	if instance != DefaultInstance() {
		return nil
	}
	pid := os.Getpid()
	return &successor{host: strings.TrimSuffix(instance, strconv.Itoa(pid)), self: pid, alive: processAlive}
}

// predecessor returns the pid of inst when it is a default instance of
// this host other than this process ("hostname-1234").
func (s *successor) predecessor(inst string) (int, bool) {
	rest, ok := strings.CutPrefix(inst, s.host)
	if !ok || rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
		return 0, false
	}
	pid, err := strconv.Atoi(rest)
	return pid, err == nil && pid > 0 && pid != s.self
}

// staleQuery asks, in a beat's pipeline, for the type's instances that
// last beat more than MissingAfter before now.
func (p *Publisher) staleQuery(ctx context.Context, pipe redis.Pipeliner, now time.Time) *redis.ZSliceCmd {
	if p.succ == nil {
		return nil
	}
	return pipe.ZRangeByScoreWithScores(ctx, p.keys.Registry(p.cfg.Type), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + unixString(now.Add(-p.cfg.MissingAfter)), Count: maxPredecessors,
	})
}

// retirePredecessors retires, among the stale entries of the beat, the
// instances that ran on this host under hostname-pid, whose process is
// gone (no process has their pid), whose key expired (MISSING, not
// shutting down): a restarted worker that cannot keep its identity
// resolves its predecessor's WorkerHeartbeatMissing alert itself. Each
// retirement is audited with this instance as the actor (Retire).
func (p *Publisher) retirePredecessors(ctx context.Context, stale *redis.ZSliceCmd) {
	if stale == nil || stale.Err() != nil {
		return
	}
	for _, z := range stale.Val() {
		inst, _ := z.Member.(string)
		pid, ok := p.succ.predecessor(inst)
		if !ok || p.succ.alive(pid) {
			continue
		}
		var exists *redis.IntCmd
		var stopping *redis.BoolCmd
		_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			exists = pipe.Exists(ctx, p.keys.Heartbeat(p.cfg.Type, inst))
			stopping = pipe.HExists(ctx, p.keys.Stopping(p.cfg.Type), inst)
			return nil
		})
		if err != nil || exists.Val() > 0 || stopping.Val() {
			continue // unreadable, still keyed, or it was shutting down: not MISSING
		}
		last, _ := scoreTime(z.Score, time.Now())
		reason := fmt.Sprintf("successor on the same host: process %d is gone, no heartbeat since %s", pid, timeOrUnknown(last))
		r, err := Retire(ctx, p.rdb, p.keys, p.cfg.Type, inst, p.cfg.Instance, reason)
		switch {
		case errors.Is(err, ErrNoInstance), errors.Is(err, ErrInstanceRunning):
		case err != nil:
			p.cfg.Logger.Warn("heartbeat: cannot retire a dead predecessor", "type", p.cfg.Type, "predecessor", inst, "err", err)
		default:
			p.cfg.Logger.Info("heartbeat: retired a dead predecessor on this host", "type", p.cfg.Type,
				"predecessor", r.Instance, "instance", p.cfg.Instance, "last_seen", r.LastSeen)
		}
	}
}

func timeOrUnknown(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}
