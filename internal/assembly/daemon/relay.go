package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/redrive/redrive/internal/assembly/config"
	"github.com/redrive/redrive/internal/assembly/exporter"
	"github.com/redrive/redrive/relay"
	"github.com/redrive/redrive/worker"
)

// RelayOptions are the flags of `redrive relay`.
type RelayOptions struct {
	// Listen overrides relay.listen (--listen).
	Listen string
	// Instance overrides heartbeat.instance (--instance).
	Instance string
}

// RunRelay runs redrive relay until ctx ends: the workers of the
// configuration at path (c is it, loaded and checked) that have an
// endpoint, each consuming as a Go worker would and POSTing its messages
// to its endpoint, with heartbeats in the configured Redis, and an
// exporter on relay.listen serving their metrics. Bad options, or a
// configuration without an endpoint, match ErrInvalid.
func RunRelay(ctx context.Context, c *config.Config, path string, o RelayOptions, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	listen, err := ListenAddr("--listen", o.Listen, c.Relay.Listen)
	if err != nil {
		return err
	}
	srv, err := exporter.New(exporter.Config{Logger: log})
	if err != nil {
		return err
	}
	rdb := RedisClient(c, log)
	defer rdb.Close()
	r, err := relay.Load(ctx, path, relay.Config{Runtime: worker.Config{Logger: log, Registerer: srv.Registerer(),
		HeartbeatRedis: rdb, Instance: o.Instance, NoSignals: true}})
	switch {
	case errors.Is(err, relay.ErrNoEndpoint):
		return invalidf("%w: give a worker an endpoint (workers[].endpoint.url)", err)
	case err != nil:
		return err
	}
	ln, err := listenTCP(ctx, listen)
	if err != nil {
		_ = r.Runtime().Broker().Close()
		return invalid(fmt.Errorf("relay: %w", err))
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	for _, name := range r.Workers() {
		log.Info("relay: delivering to the endpoint", "worker", name, "endpoint", r.Endpoint(name).URL())
	}
	err = r.Run(ctx)
	stop()
	if serr := <-served; serr != nil && err == nil {
		err = serr
	}
	return err
}
