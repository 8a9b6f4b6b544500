package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq/pgstore"
	"github.com/redrive/redrive/exactlyonce"
)

// effects runs what the exactly_once section asks of serve until ctx
// ends: the tables migrated (retried while the database is unreachable),
// the outbox's relay publishing through b, the inbox's partitions and
// retention, and their metrics on the exporter. Nothing when the section
// is off.
func (d *Daemon) effects(ctx context.Context, b broker.Broker) error {
	eo := d.c.ExactlyOnce
	if !eo.Enabled {
		return nil
	}
	url := d.c.EffectsDatabaseURL()
	pool, err := pgxpool.New(ctx, url) // connects when used
	if err != nil {
		return invalidf("exactly_once.url %s: %v", pgstore.MaskURL(url), err)
	}
	defer pool.Close()
	s, err := exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: eo.Schema, InboxRetention: time.Duration(eo.InboxRetention),
		StalledAfter: time.Duration(eo.StalledAfter), Registerer: d.exp.Registerer(), Logger: d.log})
	if err != nil {
		return invalid(err)
	}
	ok, err := retry(ctx, d.log, "the exactly_once database", pgstore.MaskURL(url), func(ctx context.Context) (bool, error) {
		return true, s.Migrate(ctx)
	}, nil)
	if err != nil || !ok {
		return err
	}
	relay, err := s.NewRelay(exactlyonce.RelayConfig{Broker: b, Batch: eo.RelayBatch, PollInterval: time.Duration(eo.PollInterval), Logger: d.log})
	if err != nil {
		return invalid(err)
	}
	d.log.Info("serve: relaying the outbox", "schema", eo.Schema, "database", pgstore.MaskURL(url))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Run(gctx) })
	g.Go(func() error { return relay.Run(gctx) })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("exactly_once: %w", err)
	}
	return nil
}
