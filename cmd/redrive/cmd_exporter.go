package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redrive/redrive/internal/daemon"
)

func init() {
	register(&command{
		name:    "exporter",
		summary: "Serve Prometheus metrics, /healthz and /readyz (heartbeats, lag, DLQ depth); no keeper, no admin API",
		help: `Samples in the background and serves the last samples on exporter.listen
(--listen overrides it): GET /metrics (Prometheus), GET /healthz (JSON health
report: 200 UP or DEGRADED, 503 DOWN when the broker is unreachable) and
GET /readyz (200 once every source was sampled and the broker answered).

Sources: RabbitMQ queue depth (every group queue, its DLQ, the delay tiers
and the unroutable queue) or Kafka consumer lag of the configured workers;
worker heartbeats in Redis; and, when postgres.url is set, the dead letters
pending per DLQ (one grouped count per interval). 'redrive serve' runs the
same exporter next to the DLQ keeper. Stops cleanly on SIGINT or SIGTERM.`,
		flags: func(fs *flag.FlagSet) action {
			var f daemon.ExporterOptions
			fs.StringVar(&f.Listen, "listen", "", "serve on `ADDR` (host:port), overriding exporter.listen")
			durationFlag(fs, &f.Interval, "sample-interval", "sample every `DURATION` (default: lag 30s, heartbeats and DLQ counts 15s)")
			return func(ctx context.Context, inv *invocation) error { return runExporter(ctx, inv, f) }
		},
	})
}

// runExporter serves the exporter alone.
func runExporter(ctx context.Context, inv *invocation, f daemon.ExporterOptions) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	return daemonError(daemon.RunExporter(ctx, c, f, daemonLogger(inv.stderr)))
}

// durationFlag defines a duration flag without a printed default (the
// usage says what the default is).
func durationFlag(fs *flag.FlagSet, p *time.Duration, name, usage string) {
	fs.Func(name, usage, func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (such as 5s or 1m)", s)
		}
		*p = d
		return nil
	})
}
