package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/dlq"
	"github.com/redrive/redrive/dlq/keeper"
	"github.com/redrive/redrive/dlq/pgstore"
)

// keeperSide is what the keeper scenario needs of a broker's run besides
// a drainer: the name of a subscription's DLQ, the raw client draining
// it, and what is left on it.
type keeperSide interface {
	drainer
	// dlqOf names the DLQ queue (RabbitMQ) or topic (Kafka) of s.
	dlqOf(s broker.Subscription) string
	// rawDrainDLQ drains n messages of the DLQ through the raw client,
	// acking (RabbitMQ) or committing (Kafka) each, and returns its row.
	rawDrainDLQ(ctx context.Context, dlqName string, n int) (Row, error)
	// keeperSource is the source the keeper reads the DLQ through.
	keeperSource() dlq.Source
	// held is how many messages the DLQ holds: RabbitMQ the queue's
	// ready messages, Kafka the sum of the topic's end offsets.
	held(ctx context.Context, dlqName string) (int64, error)
	// left is what the DLQ still holds for the keeper once it stopped:
	// RabbitMQ the queue's ready messages, Kafka the keeper group's lag.
	left(ctx context.Context, dlqName string) (int64, error)
}

// deadLettered makes a subscription whose DLQ holds n real dead letters:
// n messages published to its topic are consumed by redrive with a
// handler failing each permanently, so that the pipeline dead-letters
// them with their envelope (not measured). It returns once the DLQ holds
// them all.
func deadLettered(ctx context.Context, k keeperSide, name string, n int) (broker.Subscription, error) {
	e := k.env()
	s, err := k.sub(ctx, name)
	if err != nil {
		return s, err
	}
	if err := k.fill(ctx, s.Topic, n); err != nil {
		return s, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.redrive.Consume(cctx, s, func(context.Context, *broker.Delivery) error {
			return broker.Permanent(errBench)
		})
	}()
	dlqName := k.dlqOf(s)
	werr := waitFor(ctx, e.cfg.Timeout, func() (bool, error) {
		held, err := k.held(ctx, dlqName)
		return held >= int64(n), err
	})
	cancel()
	if cerr := <-done; cerr != nil {
		return s, fmt.Errorf("dead-letter %d messages of %s: %w", n, s.Topic, cerr)
	}
	if werr != nil {
		return s, fmt.Errorf("dead-letter %d messages of %s: %w", n, s.Topic, werr)
	}
	return s, nil
}

// waitFor polls cond every 50 ms until it holds, fails, ctx ends or
// timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-limit:
			return fmt.Errorf("timed out after %s", timeout)
		case <-tick.C:
		}
	}
}

// keeper: fill a DLQ with KeeperMessages real dead letters and drain it
// with the raw client (acks / commits, no store), fill another the same
// way and drain it with keeper.Keeper into a fresh PostgreSQL schema
// (Store.InsertBatch, acknowledged after the commit); issue 22's target is
// the keeper ≥ 0.9 × the raw drain. The store must hold each dead letter
// once and the DLQ nothing.
func keeperScenario(ctx context.Context, k keeperSide, backend string) ([]Row, error) {
	e := k.env()
	n := e.cfg.KeeperMessages

	s, err := deadLettered(ctx, k, "keeper-raw", n)
	if err != nil {
		return nil, err
	}
	e.progress(ScenarioKeeper, ClientRaw)
	raw, err := k.rawDrainDLQ(ctx, k.dlqOf(s), n)
	if err != nil {
		return nil, err
	}
	raw.Scenario = ScenarioKeeper
	raw.Note = "ack/commit only, no store; " + raw.Note

	if s, err = deadLettered(ctx, k, "keeper", n); err != nil {
		return []Row{raw}, err
	}
	e.progress(ScenarioKeeper, ClientRedrive)
	rd, err := keepDLQ(ctx, k, backend, k.dlqOf(s), n)
	if err != nil {
		return []Row{raw}, err
	}
	compare(&rd, raw, ClientRaw, 0.9) // issue 22: keeper ≥ 0.9 × raw drain
	return []Row{raw, rd}, nil
}

// keepDLQ runs a keeper.Keeper on dlqName into a fresh schema of
// cfg.DatabaseURL until it stored n entries, and returns its row after
// checking the store holds n and the DLQ nothing. The schema is dropped
// at the end.
func keepDLQ(ctx context.Context, k keeperSide, backend string, dlqName string, n int) (Row, error) {
	e := k.env()
	schema := "redrive_bench_" + strings.ToLower(broker.NewMessageID()[:10]) + "_keeper"
	scfg := StoreConfig{DatabaseURL: e.cfg.DatabaseURL, Logger: e.cfg.Logger}.WithDefaults()
	defer dropSchemas(scfg, schema)
	st, err := pgstore.Open(ctx, scfg.DatabaseURL, pgstore.Config{Schema: schema, Logger: e.cfg.Logger})
	if err != nil {
		return Row{}, fmt.Errorf("keeper store: %w", err)
	}
	defer st.Close()

	var (
		mu   sync.Mutex
		seen = make(map[string]bool, n)
		dr   *drain
	)
	hook := dlq.HookFunc(func(_ context.Context, r dlq.Record) error {
		mu.Lock()
		first := !seen[r.Key()]
		seen[r.Key()] = true
		mu.Unlock()
		if first {
			dr.hit()
		}
		return nil
	})
	kp, err := keeper.New(keeper.Config{Source: k.keeperSource(), Store: st, Broker: backend,
		DLQs: map[string]broker.Severity{dlqName: ""}, Hook: hook, Logger: e.cfg.Logger})
	if err != nil {
		return Row{}, err
	}
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	m := startMeter()
	dr = newDrain(n)
	go func() { done <- kp.Run(kctx) }()
	werr := dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	cancel()
	if kerr := <-done; kerr != nil {
		return Row{}, fmt.Errorf("keeper: %w", kerr)
	}
	if werr != nil {
		return Row{}, fmt.Errorf("keeper: %w", werr)
	}
	rd := dr.row(ScenarioKeeper, e.broker, ClientRedrive, u)
	stored, err := st.Count(ctx, dlq.Query{DLQ: dlqName})
	if err != nil {
		return rd, fmt.Errorf("keeper: count: %w", err)
	}
	left, err := k.left(ctx, dlqName)
	if err != nil {
		return rd, fmt.Errorf("keeper: what is left on %s: %w", dlqName, err)
	}
	if stored != int64(n) || left != 0 {
		return rd, fmt.Errorf("keeper: %d entries stored of %d dead letters, %d left on %s; want each stored once, none left", stored, n, left, dlqName)
	}
	rd.Note = "PostgreSQL store, InsertBatch per batch, ack after commit (CPU: this process, not PostgreSQL's); " + rd.Note
	return rd, nil
}
