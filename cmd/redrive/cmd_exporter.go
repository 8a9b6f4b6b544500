package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/internal/assembly/daemon"
)

func newExporterCmd() *cobra.Command {
	var f daemon.ExporterOptions
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve Prometheus metrics, /healthz and /readyz (heartbeats, lag, DLQ depth); no keeper, no admin API",
		Long: `Samples in the background and serves the last samples on exporter.listen
(--listen overrides it): GET /metrics (Prometheus), GET /healthz (JSON health
report: 200 UP or DEGRADED, 503 DOWN when the broker is unreachable) and
GET /readyz (200 once every source was sampled and the broker answered).

Sources: RabbitMQ queue depth (every group queue, its DLQ, the delay tiers
and the unroutable queue) or Kafka consumer lag of the configured workers;
worker heartbeats in Redis; and, when postgres.url is set, the dead letters
pending per DLQ (one grouped count per interval). 'redrive serve' runs the
same exporter next to the DLQ keeper. Stops cleanly on SIGINT or SIGTERM.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExporter(cmd.Context(), newInvocation(cmd, args), f)
		},
	}
	cmd.Flags().StringVar(&f.Listen, "listen", "", "serve on `ADDR` (host:port), overriding exporter.listen")
	addSampleIntervalFlag(cmd, &f.Interval)
	return cmd
}

// runExporter serves the exporter alone.
func runExporter(ctx context.Context, inv *invocation, f daemon.ExporterOptions) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	return daemonError(daemon.RunExporter(ctx, c, f, daemonLogger(inv.stderr)))
}

// addSampleIntervalFlag defines --sample-interval on cmd (serve,
// exporter): 0, the default, leaves each sampler its own interval.
func addSampleIntervalFlag(cmd *cobra.Command, p *time.Duration) {
	cmd.Flags().DurationVar(p, "sample-interval", 0, "sample every `DURATION` (default: lag 30s, heartbeats and DLQ counts 15s)")
}
