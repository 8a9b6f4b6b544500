package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/internal/assembly/daemon"
)

func newRelayCmd() *cobra.Command {
	var f daemon.RelayOptions
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Deliver the messages of workers with an endpoint to their HTTP endpoints (handlers in any language)",
		Long: `Runs, until SIGINT or SIGTERM, every configured worker that has an endpoint
(workers[].endpoint): each consumes its topic exactly as a Go worker of the
same configuration would (queue or consumer group, retry mode and schedule,
kill switch, operator pause, heartbeats in Redis under the worker's name,
queue_ttl, max_claims) and POSTs each message to its endpoint as a
CloudEvent in HTTP binary mode: the payload as the body, byte for byte; the
message id as ce-id; its headers and redrive's story (attempt, first and
last failure, last error) as headers (see docs/relay.md).

The answer decides: 2xx = done; a status of endpoint.permanent_statuses
(default 400, 404, 410, 422) or a JSON body {"status": "DROP"} = to the DLQ
now; 429 or 503 with Retry-After = retry after it; anything else, a timeout
or no answer = retry by the worker's schedule, counted as transient by its
kill switch.

Metrics (the endpoints' requests and latency, the workers' handler
metrics) are served on relay.listen (--listen overrides it) at /metrics;
health probes on health.listen. A Go program given the same configuration
leaves these workers to the relay.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRelay(cmd.Context(), newInvocation(cmd, args), f)
		},
	}
	cmd.Flags().StringVar(&f.Listen, "listen", "", "serve /metrics on `ADDR` (host:port), overriding relay.listen")
	cmd.Flags().StringVar(&f.Instance, "instance", "", "name this process `NAME` in heartbeats and dead letters, overriding heartbeat.instance")
	return cmd
}

func runRelay(ctx context.Context, inv *invocation, f daemon.RelayOptions) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	return daemonError(daemon.RunRelay(ctx, c, inv.configPath, f, daemonLogger(inv.stderr)))
}
