package main

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/daemon"
)

func newServeCmd() *cobra.Command {
	var f daemon.Options
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the DLQ keeper, the admin API and the exporter in one process",
		Long: `Runs, until SIGINT or SIGTERM:

  - the DLQ keeper: it consumes the DLQ of every configured worker
    (RabbitMQ: <topic>.<worker>.dlq; Kafka: <topic>.dlq, one per topic),
    stores each dead letter, counts it and only then acknowledges it;
  - the admin API on admin.listen (--listen overrides it), with the bearer
    token admin.token, else $REDRIVE_ADMIN_TOKEN; without a token it
    refuses to start unless --insecure-no-auth is given and the address is
    loopback;
  - the console on the same address (http://ADDR/): log in with
    admin.token, or read-only with admin.viewer_token;
  - the exporter on exporter.listen (--metrics-listen overrides it):
    /metrics, /healthz, /readyz, as 'redrive exporter' serves them;
  - the background work of the store: reconciling interrupted replays,
    archiving past each DLQ's retention, refreshing redrive_dlq_pending.

The store is PostgreSQL when postgres.url is set. Otherwise it is held in
memory (lost at exit; a warning says so), or journaled to --data FILE,
which also takes precedence over postgres.url.

Serve declares the configured topology (as 'redrive topology apply' does)
so that the DLQs it keeps exist. An unreachable broker or database is
retried with back-off (1s, doubling, up to 30s), logged with its password
masked; meanwhile the exporter already serves and /healthz reads DOWN.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(cmd.Context(), newInvocation(cmd, args), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Listen, "listen", "", "serve the admin API on `ADDR` (host:port), overriding admin.listen")
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve the exporter on `ADDR` (host:port), overriding exporter.listen")
	fs.StringVar(&f.Data, "data", "", "keep dead letters in the embedded store journaled to `FILE` instead of PostgreSQL or memory")
	fs.BoolVar(&f.InsecureNoAuth, "insecure-no-auth", false, "serve the admin API without a token (loopback addresses only)")
	addSampleIntervalFlag(cmd, &f.Interval)
	return cmd
}

func serve(ctx context.Context, inv *invocation, f daemon.Options) error {
	c, err := inv.loadConfig()
	if err != nil {
		return err
	}
	if err := tokenFromEnv(c); err != nil {
		return err
	}
	d, err := daemon.New(c, f, daemonLogger(inv.stderr))
	if err != nil {
		return daemonError(err)
	}
	defer d.Close()
	return daemonError(d.Run(ctx))
}

// daemonError maps the daemon's bad input (daemon.ErrInvalid) to exit
// status 2.
func daemonError(err error) error {
	if errors.Is(err, daemon.ErrInvalid) {
		return badInput(err)
	}
	return err
}

// tokenFromEnv sets admin.token from $REDRIVE_ADMIN_TOKEN when the
// configuration leaves it out, as `redrive dev` and the dlq commands read
// it.
func tokenFromEnv(c *config.Config) error {
	tok := os.Getenv("REDRIVE_ADMIN_TOKEN")
	switch {
	case c.Admin.Token != "" || tok == "":
		return nil
	case config.TokenProblem(tok) != "":
		return usageErrorf("$REDRIVE_ADMIN_TOKEN: %s", config.TokenProblem(tok))
	case tok == c.Admin.ViewerToken:
		return usageErrorf("$REDRIVE_ADMIN_TOKEN is admin.viewer_token: the operator's token must differ from the viewer's")
	}
	c.Admin.Token = tok
	return nil
}
