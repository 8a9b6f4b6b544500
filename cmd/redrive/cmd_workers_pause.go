package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/redis/go-redis/v9"

	"github.com/redrive/redrive/dlq/admin"
	"github.com/redrive/redrive/heartbeat"
	"github.com/redrive/redrive/internal/assembly/daemon"
	"github.com/redrive/redrive/worker"
)

func newWorkersPauseCmd() *cobra.Command {
	var actor, reason string
	var api adminFlags
	cmd := &cobra.Command{
		Use:   "pause WORKER",
		Short: "Stop every instance of a worker taking messages until resumed (audited)",
		Long: `Pauses worker WORKER: every instance of it (run with the worker package
and a heartbeat) stops taking messages within worker.DefaultPausePoll
(2 s) and beats PAUSED (operator: REASON) until 'redrive workers resume'.
The pause lives in Redis (workers:WORKER:paused) without expiry, so it
outlives restarts of the instances. Messages wait in the broker meanwhile:
none is retried or dead-lettered for the pause. For planned maintenance of
a downstream. Pausing a paused worker replaces the reason. Each pause and
resume is appended to the audit stream in Redis (who: --actor, default
$USER; why: --reason, required).

With --server, the pause goes through the admin API of 'redrive serve'
(POST /internal/v1/workers/{worker}/pause) with your token (--token, else
$REDRIVE_ADMIN_TOKEN): the audit names whom the token belongs to, and
--actor, when given, is recorded beside that name. Without it the command
writes to Redis itself, and who it is is what --actor (or $USER) says.
`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeWorker,
		RunE: func(cmd *cobra.Command, args []string) error {
			if api.server != "" || api.token != "" {
				api.actor = actor
				return pauseViaAPI(cmd.Context(), newInvocation(cmd, args), api, reason)
			}
			return pauseWorker(cmd.Context(), newInvocation(cmd, args), actor, reason)
		},
	}
	api.registerServer(cmd, "pause through the admin API at `URL`, audited with your token's name")
	addActorFlag(cmd, &actor)
	addReasonFlag(cmd, &reason, "it is paused (shown with PAUSED)")
	return cmd
}

func newWorkersResumeCmd() *cobra.Command {
	var actor string
	var api adminFlags
	cmd := &cobra.Command{
		Use:   "resume WORKER",
		Short: "Let a paused worker take messages again (audited)",
		Long: `Lifts the pause of worker WORKER ('redrive workers pause'): its instances
take messages again within 2 s. A worker that is not paused is refused
(exit 2). Audited with --actor (default $USER). With --server, through
the admin API (POST /internal/v1/workers/{worker}/resume), audited with
your token's name (see 'redrive workers pause').`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeWorker,
		RunE: func(cmd *cobra.Command, args []string) error {
			if api.server != "" || api.token != "" {
				api.actor = actor
				return resumeViaAPI(cmd.Context(), newInvocation(cmd, args), api)
			}
			return resumeWorker(cmd.Context(), newInvocation(cmd, args), actor)
		},
	}
	api.registerServer(cmd, "resume through the admin API at `URL`, audited with your token's name")
	addActorFlag(cmd, &actor)
	return cmd
}

func pauseWorker(ctx context.Context, inv *invocation, actor, reason string) error {
	if err := heartbeat.CheckPauseReason(reason); err != nil {
		return usageErrorf("--reason: %v", errors.Unwrap(err))
	}
	actor, err := auditActor(actor)
	if err != nil {
		return err
	}
	rdb, keys, addr, err := fleetRedis(inv)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	p, err := heartbeat.Pauses{RDB: rdb, Keys: keys}.Pause(ctx, inv.args[0], actor, reason)
	switch {
	case errors.Is(err, heartbeat.ErrUnknownType), errors.Is(err, heartbeat.ErrBadReason), errors.Is(err, heartbeat.ErrBadActor):
		return badInput(err)
	case err != nil:
		return fmt.Errorf("redis at %s: %w", addr, err)
	}
	_, err = fmt.Fprintf(inv.stdout, "paused %s by %s: %s (its instances stop taking messages within %s)\n",
		printable(p.Type), printable(p.Actor), printable(p.Reason), worker.DefaultPausePoll)
	return err
}

func resumeWorker(ctx context.Context, inv *invocation, actor string) error {
	actor, err := auditActor(actor)
	if err != nil {
		return err
	}
	rdb, keys, addr, err := fleetRedis(inv)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	p, err := heartbeat.Pauses{RDB: rdb, Keys: keys}.Resume(ctx, inv.args[0], actor)
	switch {
	case errors.Is(err, heartbeat.ErrNotPaused), errors.Is(err, heartbeat.ErrBadActor):
		return badInput(err)
	case err != nil:
		return fmt.Errorf("redis at %s: %w", addr, err)
	}
	since := "an unknown time"
	if !p.At.IsZero() {
		since = p.At.UTC().Format(time.RFC3339)
	}
	_, err = fmt.Fprintf(inv.stdout, "resumed %s by %s (paused by %s since %s: %s)\n", printable(p.Type), printable(actor),
		printable(p.Actor), since, printable(p.Reason))
	return err
}

// pauseViaAPI pauses through the admin API, as the token's holder.
func pauseViaAPI(ctx context.Context, inv *invocation, f adminFlags, reason string) error {
	if err := heartbeat.CheckPauseReason(reason); err != nil {
		return usageErrorf("--reason: %v", errors.Unwrap(err))
	}
	c, err := newAdminClient(inv, f)
	if err != nil {
		return err
	}
	var p admin.WorkerPause
	if err := c.call(ctx, http.MethodPost, "/internal/v1/workers/"+url.PathEscape(inv.args[0])+"/pause", nil, map[string]string{"reason": reason}, &p); err != nil {
		return err
	}
	_, err = fmt.Fprintf(inv.stdout, "paused %s by %s: %s (its instances stop taking messages within %s)\n",
		printable(p.Worker), printable(p.PausedBy), printable(p.Reason), worker.DefaultPausePoll)
	return err
}

// resumeViaAPI resumes through the admin API, as the token's holder.
func resumeViaAPI(ctx context.Context, inv *invocation, f adminFlags) error {
	c, err := newAdminClient(inv, f)
	if err != nil {
		return err
	}
	var p admin.WorkerPause
	if err := c.call(ctx, http.MethodPost, "/internal/v1/workers/"+url.PathEscape(inv.args[0])+"/resume", nil, nil, &p); err != nil {
		return err
	}
	_, err = fmt.Fprintf(inv.stdout, "resumed %s by %s (paused by %s since %s: %s)\n", printable(p.Worker), printable(p.ResumedBy),
		printable(p.PausedBy), p.PausedAt.UTC().Format(time.RFC3339), printable(p.Reason))
	return err
}

// fleetTimeout bounds one audited change of the fleet (retire, pause,
// resume) in Redis.
const fleetTimeout = 10 * time.Second

// fleetRedis opens the configuration's Redis for an audited change of the
// fleet and returns the names of its keys (redis.prefix) and its address
// for error messages.
func fleetRedis(inv *invocation) (*redis.Client, heartbeat.Keys, string, error) {
	c, err := inv.loadConfig()
	if err != nil {
		return nil, heartbeat.Keys{}, "", err
	}
	return daemon.RedisClient(c, logger()), daemon.HeartbeatKeys(c), c.Redis.Addr, nil
}

// actorOrUser is the audit's actor: the --actor flag, else $USER.
func actorOrUser(actor string) string {
	if actor == "" {
		return os.Getenv("USER")
	}
	return actor
}

// auditActor is the actor of an audited change of the fleet (pause,
// resume, retire): --actor, else $USER, refused (bad input) when it is
// empty or holds what a terminal would obey (heartbeat.CheckActor).
func auditActor(flag string) (string, error) {
	actor := actorOrUser(flag)
	if err := heartbeat.CheckActor(actor); err != nil {
		if flag == "" {
			return "", usageErrorf("--actor: $USER is %q: %v; name who does it with --actor", actor, errors.Unwrap(err))
		}
		return "", usageErrorf("--actor: %v", errors.Unwrap(err))
	}
	return actor, nil
}
