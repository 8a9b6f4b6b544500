package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/redrive/redrive/broker"
	"github.com/redrive/redrive/exactlyonce"
)

// Clients of the effects scenario's rows.
const (
	// ClientPlainTx is a redrive handler that inserts its effect in a
	// transaction of its own: the inbox row's baseline.
	ClientPlainTx = "plain handler, own tx"
	// ClientInbox is the same insert through the exactlyonce inbox.
	ClientInbox = "inbox handler"
	// ClientRelay is the exactlyonce relay draining committed outbox
	// messages (the raw row: the same messages published with confirms).
	ClientRelay = "outbox relay"
	// ClientRelayLatency is the relay under load: writers committing one
	// message per transaction as fast as they can, the latency from each
	// commit to the broker's confirm of its publication.
	ClientRelayLatency = "relay, commit to publish"
	// ClientRelayPolling is ClientRelayLatency with the writers sending
	// no NOTIFY (exactlyonce.Config.NoNotify) and the relay polling every
	// relayPollInterval.
	ClientRelayPolling = "relay, commit to publish, no NOTIFY"
)

// relayLatencyTarget is issue 43's commit-to-publish p99 under load.
const relayLatencyTarget = 50 * time.Millisecond

// effectsSide is what the effects scenario needs of a broker's run
// besides a drainer: the raw client publishing messages with confirms.
type effectsSide interface {
	drainer
	// rawPublish times the raw client publishing n messages of the run's
	// size to a topic or queue of its own, in batches of batch, each
	// batch's confirms awaited, with a message id as redrive writes it.
	rawPublish(ctx context.Context, name string, n, batch int) (Row, error)
	// rawSender returns the raw client publishing given messages to a
	// topic or queue of its own named name (relayByHand).
	rawSender(ctx context.Context, name string) (rawSender, error)
}

// effectsRounds is how many rounds the inbox and relay comparisons split
// their messages into, the two sides in turn (the order alternating):
// one pair on a busy machine swung by ±30 %; the ratio is the median of
// the rounds' ratios.
const effectsRounds = 3

// effects (issue 43), on a fresh schema of cfg.DatabaseURL:
//
//   - the inbox: pre-filled messages drained by redrive's Consume with a
//     handler inserting one row in a transaction of its own, against the
//     same insert through the exactlyonce inbox (its record, its lock,
//     the same commit): target ≥ 0.8 × the plain one;
//   - the relay: committed outbox messages published by a relay (read,
//     Publish with confirms, delete), against the raw client publishing
//     as many with confirms in batches of the relay's: target ≥ 0.8 ×
//     raw;
//   - the latency: Concurrency writers each committing one message per
//     transaction as fast as they can while a relay runs, commit to the
//     broker's confirm: target p99 ≤ 50 ms; then the same with the
//     writers sending no NOTIFY (Config.NoNotify) and the relay polling
//     every 10 ms.
//
// The comparisons run effectsRounds rounds of EffectsMessages / rounds
// messages a side; each latency run EffectsMessages.
func effectsScenario(ctx context.Context, d effectsSide) ([]Row, error) {
	e := d.env()
	n := e.cfg.EffectsMessages
	per := (n + effectsRounds - 1) / effectsRounds
	fx, err := newEffectsDB(ctx, e)
	if err != nil {
		return nil, err
	}
	defer fx.close()
	in, err := fx.store.Inbox(exactlyonce.InboxConfig{})
	if err != nil {
		return nil, err
	}
	plainTx := func(h exactlyonce.Handler) broker.Handler {
		return func(ctx context.Context, m *broker.Delivery) error {
			return pgx.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error { return h(ctx, tx, m) })
		}
	}
	plains, inboxes, err := alternate(effectsRounds, func(i int) (Row, error) {
		e.progress(ScenarioEffects, ClientPlainTx)
		return fx.drain(ctx, d, fmt.Sprintf("effects-plain-%d", i), ClientPlainTx, per, plainTx)
	}, func(i int) (Row, error) {
		e.progress(ScenarioEffects, ClientInbox)
		return fx.drain(ctx, d, fmt.Sprintf("effects-inbox-%d", i), ClientInbox, per, in.Handler)
	})
	if err != nil {
		return nil, err
	}
	plain, inbox := medianRow(plains), medianRow(inboxes)
	compareRounds(&inbox, inboxes, plains, ClientPlainTx, 0.8)
	rows := []Row{plain, inbox}

	var raws, relays, hands []Row
	for i := range effectsRounds { // the three in turn, each first once
		sides := []func() error{func() error {
			e.progress(ScenarioEffects, ClientRaw)
			r, err := d.rawPublish(ctx, fmt.Sprintf("effects-raw-%d", i), per, exactlyonce.DefaultRelayBatch)
			r.Scenario, raws = ScenarioEffects, append(raws, r)
			return err
		}, func() error {
			e.progress(ScenarioEffects, ClientRelay)
			r, err := fx.relayDrain(ctx, d, fmt.Sprintf("effects-relay-%d", i), per)
			relays = append(relays, r)
			return err
		}, func() error {
			e.progress(ScenarioEffects, ClientRelayByHand)
			r, err := fx.relayByHand(ctx, d, fmt.Sprintf("effects-byhand-%d", i), per)
			hands = append(hands, r)
			return err
		}}
		for j := range sides {
			if err := sides[(i+j)%len(sides)](); err != nil {
				return rows, err
			}
		}
	}
	raw, relay, hand := medianRow(raws), medianRow(relays), medianRow(hands)
	raw.Note = fmt.Sprintf("confirmed, batches of %d (the relay's); %s", exactlyonce.DefaultRelayBatch, raw.Note)
	vsHand := relay
	compareRounds(&relay, relays, raws, "raw confirmed publish", 0.8)
	if x, text, ok := medianRatio(relays, hands); ok {
		vsHand.Client, vsHand.Ratio, vsHand.Baseline = ClientRelayVsByHand, x, ClientRelayByHand
		vsHand.Note = fmt.Sprintf("the relay's rounds again, over the raw client relaying by hand (no target: issue 43's is the row above); ratio: median of the rounds' ratios (%s)", text)
	}
	rows = append(rows, raw, relay, hand, vsHand)

	e.progress(ScenarioEffects, ClientRelayLatency)
	lat, err := fx.relayLatency(ctx, d, fx.store, ClientRelayLatency, n, 0)
	if err != nil {
		return rows, err
	}
	rows = append(rows, lat)
	e.progress(ScenarioEffects, ClientRelayPolling)
	quiet, err := exactlyonce.New(exactlyonce.Config{Pool: fx.pool, Schema: fx.schema, NoNotify: true, Logger: e.cfg.Logger})
	if err != nil {
		return rows, err
	}
	polled, err := fx.relayLatency(ctx, d, quiet, ClientRelayPolling, n, relayPollInterval)
	if err != nil {
		return rows, err
	}
	return append(rows, polled), nil
}

// relayPollInterval is the relay's poll of the no-NOTIFY latency row.
const relayPollInterval = 10 * time.Millisecond

// alternate runs rounds rounds of a and b, a first in even rounds and b
// first in odd ones, and returns their rows.
func alternate(rounds int, a, b func(round int) (Row, error)) ([]Row, []Row, error) {
	var as, bs []Row
	for i := range rounds {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		r1, err := first(i)
		if err != nil {
			return as, bs, err
		}
		r2, err := second(i)
		if err != nil {
			return as, bs, err
		}
		if i%2 == 1 {
			r1, r2 = r2, r1
		}
		as, bs = append(as, r1), append(bs, r2)
	}
	return as, bs, nil
}

// effectsDB is the scenario's database: a schema of its own with the
// exactly-once tables and a ledger, dropped by close.
type effectsDB struct {
	e      *base
	pool   *pgxpool.Pool
	schema string
	store  *exactlyonce.Store
}

func newEffectsDB(ctx context.Context, e *base) (*effectsDB, error) {
	pc, err := pgxpool.ParseConfig(e.cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("effects: database url: %w", err)
	}
	pc.MaxConns = int32(e.cfg.Concurrency + 4) // every handler and writer a connection, the relay one more
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("effects: %w", err)
	}
	fx := &effectsDB{e: e, pool: pool, schema: "redrive_bench_" + strings.ToLower(broker.NewMessageID()[:10]) + "_effects"}
	if fx.store, err = exactlyonce.New(exactlyonce.Config{Pool: pool, Schema: fx.schema, Logger: e.cfg.Logger}); err == nil {
		err = fx.store.Migrate(ctx)
	}
	if err == nil {
		_, err = pool.Exec(ctx, `CREATE TABLE `+fx.schema+`.ledger (n bigserial PRIMARY KEY, worker text NOT NULL, key text NOT NULL)`)
	}
	if err == nil {
		_, err = pool.Exec(ctx, fmt.Sprintf(byHandTable, fx.schema))
	}
	if err != nil {
		fx.close()
		return nil, fmt.Errorf("effects: database %s: %w", e.cfg.DatabaseURL, err)
	}
	return fx, nil
}

func (fx *effectsDB) close() {
	_, _ = fx.pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+fx.schema+` CASCADE`)
	fx.pool.Close()
}

// drain pre-fills a subscription's topic with n messages and times
// redrive's Consume draining it with wrap(the effect: one ledger row).
func (fx *effectsDB) drain(ctx context.Context, d effectsSide, name, client string, n int, wrap func(exactlyonce.Handler) broker.Handler) (Row, error) {
	e := d.env()
	s, err := d.sub(ctx, name)
	if err != nil {
		return Row{}, err
	}
	if err := d.fill(ctx, s.Topic, n); err != nil {
		return Row{}, err
	}
	dr := newDrain(n)
	h := wrap(func(ctx context.Context, tx pgx.Tx, m *broker.Delivery) error {
		if _, err := tx.Exec(ctx, `INSERT INTO `+fx.schema+`.ledger (worker, key) VALUES ($1, $2)`, m.Group, m.StableID()); err != nil {
			return err
		}
		return nil
	})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	m := startMeter()
	go func() {
		done <- e.redrive.Consume(cctx, s, func(ctx context.Context, m *broker.Delivery) error {
			if err := h(ctx, m); err != nil {
				return err
			}
			dr.hit()
			return nil
		})
	}()
	werr := dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	cancel()
	if cerr := <-done; cerr != nil {
		return Row{}, fmt.Errorf("%s: %w", client, cerr)
	}
	if werr != nil {
		return Row{}, fmt.Errorf("%s: %w", client, werr)
	}
	r := dr.row(ScenarioEffects, e.broker, client, u)
	r.Note = fmt.Sprintf("one INSERT per message, %d connections; %s", e.cfg.Concurrency+4, r.Note)
	return r, nil
}

// confirms is a relay's broker that reports each message confirmed, with
// the time of the confirm.
type confirms struct {
	broker.Broker
	confirmed func(m broker.Message, at time.Time)
}

func (c *confirms) Publish(ctx context.Context, topic string, msgs ...broker.Message) error {
	if err := c.Broker.Publish(ctx, topic, msgs...); err != nil {
		return err
	}
	now := time.Now()
	for _, m := range msgs {
		c.confirmed(m, now)
	}
	return nil
}

// relayDrain writes n messages to the outbox (committed, not timed) and
// times a relay publishing them all.
func (fx *effectsDB) relayDrain(ctx context.Context, d effectsSide, name string, n int) (Row, error) {
	e := d.env()
	s, err := d.sub(ctx, name)
	if err != nil {
		return Row{}, err
	}
	for _, batch := range messages(n, exactlyonce.DefaultRelayBatch, body(e.cfg.Size)) {
		if err := pgx.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error { return fx.store.Publish(ctx, tx, s.Topic, batch...) }); err != nil {
			return Row{}, fmt.Errorf("relay: write the outbox: %w", err)
		}
	}
	dr := newDrain(n)
	relay, err := fx.store.NewRelay(exactlyonce.RelayConfig{Logger: e.cfg.Logger,
		Broker: &confirms{Broker: e.redrive, confirmed: func(broker.Message, time.Time) { dr.hit() }}})
	if err != nil {
		return Row{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	m := startMeter()
	go func() { done <- relay.Run(rctx) }()
	werr := dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	cancel()
	<-done
	if werr != nil {
		return Row{}, fmt.Errorf("relay: %w", werr)
	}
	r := dr.row(ScenarioEffects, e.broker, ClientRelay, u)
	r.Note = fmt.Sprintf("batches of %d: read, Publish (confirmed), delete; %s", exactlyonce.DefaultRelayBatch, r.Note)
	return r, nil
}

// relayLatency runs a relay (polling every poll, 0 = the default) while
// Concurrency writers commit n messages through st, one per transaction,
// as fast as they can, and returns the row of the latencies from each
// commit to its publication's confirm.
func (fx *effectsDB) relayLatency(ctx context.Context, d effectsSide, st *exactlyonce.Store, client string, n int, poll time.Duration) (Row, error) {
	e := d.env()
	s, err := d.sub(ctx, "effects-latency-"+strings.ReplaceAll(strings.ToLower(broker.NewMessageID()[:6]), "-", ""))
	if err != nil {
		return Row{}, err
	}
	var (
		mu        sync.Mutex
		committed = make(map[string]time.Time, n)
		confirmed = make(map[string]time.Time, n)
	)
	dr := newDrain(n)
	relay, err := st.NewRelay(exactlyonce.RelayConfig{Logger: e.cfg.Logger, PollInterval: poll,
		Broker: &confirms{Broker: e.redrive, confirmed: func(m broker.Message, at time.Time) {
			mu.Lock()
			_, seen := confirmed[m.ID]
			if !seen {
				confirmed[m.ID] = at
			}
			mu.Unlock()
			if !seen {
				dr.hit()
			}
		}}})
	if err != nil {
		return Row{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	for relay.Shards() == 0 { // owning its shards: the writers do not wait for the relay's start
		select {
		case <-ctx.Done():
			return Row{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}

	b := body(e.cfg.Size)
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, e.cfg.Concurrency)
	m := startMeter()
	for range e.cfg.Concurrency {
		wg.Go(func() {
			for range work {
				msg := broker.Message{ID: broker.NewMessageID(), Value: b}
				if err := pgx.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error { return st.Publish(ctx, tx, s.Topic, msg) }); err != nil {
					errs <- err
					return
				}
				at := time.Now()
				mu.Lock()
				committed[msg.ID] = at
				mu.Unlock()
			}
		})
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return Row{}, fmt.Errorf("latency: write: %w", err)
		}
	}
	close(work)
	wg.Wait()
	werr := dr.wait(ctx, e.cfg.Timeout)
	_, u := m.stop()
	cancel()
	<-done
	if werr != nil {
		return Row{}, fmt.Errorf("latency: %w", werr)
	}
	lat := make([]time.Duration, 0, n)
	for id, c := range committed {
		lat = append(lat, max(confirmed[id].Sub(c), 0)) // a confirm can beat the writer's clock read after its commit
	}
	slices.Sort(lat)
	r := row(ScenarioEffects, e.broker, client, n, dr.elapsed(), u).withLatencies(lat)
	r.Target = fmt.Sprintf("p99 ≤ %s", dur(relayLatencyTarget))
	r.Met = r.P99 <= relayLatencyTarget
	r.Note = fmt.Sprintf("%d writers, one message per transaction, as fast as they commit (msg/s: theirs); latency = commit returned → confirm", e.cfg.Concurrency)
	if poll > 0 {
		r.Note = fmt.Sprintf("no NOTIFY, the relay polling every %s; %s", dur(poll), r.Note)
	}
	return r, nil
}
