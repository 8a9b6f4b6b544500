package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redrive/redrive/heartbeat"
)

func init() {
	register(&command{
		name:    "workers",
		summary: "Print the heartbeat table of every worker instance (Redis)",
		help: `Reads every worker heartbeat from Redis once and prints one line per
instance: its status (RUNNING, SHUTTING_DOWN, LATE, MISSING), severity
(OK, WARNING, CRITICAL), when it last beat and last handled a message, the
lag it reports and why it is not OK. Thresholds come from the heartbeat:
section and, per worker, from lag.thresholds of its topic. Exits with
status 1 when Redis cannot be read.`,
		flags: func(fs *flag.FlagSet) action {
			timeout := fs.Duration("timeout", 10*time.Second, "give up reading Redis after `DURATION`")
			return func(ctx context.Context, inv *invocation) error { return workers(ctx, inv, *timeout) }
		},
	})
}

func workers(ctx context.Context, inv *invocation, timeout time.Duration) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	log := logger()
	rdb := redisClient(c, log)
	defer rdb.Close()
	mon, err := heartbeatMonitor(c, rdb)
	if err != nil {
		return badInput(err)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	rows, err := mon.Check(ctx)
	if err != nil {
		return fmt.Errorf("cannot read heartbeats from redis at %s: %w", c.Redis.Addr, err)
	}
	return heartbeat.Render(inv.stdout, rows)
}
